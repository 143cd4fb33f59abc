"""The committed JSON Schemas in schemas/ are exactly what the models generate."""

from pathlib import Path

from services.cli.schemas_cmd import drift, generated_files
from shared.events.registry import EVENTS_BY_TOPIC, schema_files
from shared.topics import ROUTED_TOPICS, TOPIC_NAMES

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"


def test_committed_schemas_match_the_models():
    assert drift(SCHEMAS) == [], "schemas/ drifted from the models: run `make schemas`"


def test_every_topic_has_its_event_schemas():
    topics = set(TOPIC_NAMES) | set(ROUTED_TOPICS)  # wallet.endings: packs of endings
    assert set(EVENTS_BY_TOPIC) == topics
    topics_with_files = {name.split("/")[0] for name in schema_files()}
    assert topics_with_files == topics


def test_drift_is_detected(tmp_path):
    for name, text in generated_files().items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert drift(tmp_path) == []
    victim = next(iter(tmp_path.rglob("*.json")))
    victim.write_text("{}")
    (tmp_path / "old.json").write_text("{}")
    problems = drift(tmp_path)
    assert any("stale" in p for p in problems) and any("no longer generated" in p for p in problems)
