"""A demo session can deal several tables of each profile at once (the end-to-end run gets
its 100+ rounds in fewer rounds a table): every table has its own id and its profile."""

from __future__ import annotations

from pydantic import TypeAdapter

from croupier.services.demo.session import DemoConfig
from croupier.shared.events.ids import TableId


def test_two_tables_a_profile_have_ids_of_their_own():
    config = DemoConfig(profiles=("sbo-baccarat", "triple-face-id"), tables_per_profile=2,
                        run_id="abc123")
    assert config.seats == [("bac-abc123", "sbo-baccarat"), ("tf-id-abc123", "triple-face-id"),
                            ("bac2-abc123", "sbo-baccarat"), ("tf-id2-abc123", "triple-face-id")]
    assert config.tables == [t for t, _ in config.seats]
    valid = TypeAdapter(TableId)
    assert all(valid.validate_python(t) == t for t in config.tables)


def test_one_table_a_profile_keeps_the_ids_it_had():
    config = DemoConfig(profiles=("sbo-baccarat",), run_id="abc123")
    assert config.tables == ["bac-abc123"] and config.table_id("sbo-baccarat") == "bac-abc123"
