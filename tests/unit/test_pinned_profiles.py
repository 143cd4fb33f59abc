"""Issue 12 item 12: rules pinned to the round.

A round records the profile's version and digest when it opens; evaluation, settlement, audit,
replay and rebuild use that version as shipped, whatever the current profile says; a released
version never changes (`shared/profiles/released/lock.json`).
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from services.bet_settlement.round_book import on_bet, on_result, on_table_event
from services.cli.main import app as cli_app
from services.cli.profiles_cmd import (
    DEFAULT_DIR,
    ReleaseError,
    check,
    check_current,
    check_released,
    read_lock,
    release,
)
from services.dealer_event.admission import AdmissionPolicy
from services.dealer_event.state import TableState
from services.dealer_event.table_machine import MachineConfig, step
from services.game_evaluation.evaluator import EvaluationState, observe
from services.infra.clock import ManualClock
from services.infra.table_keys import table_key
from services.operator.audit import Books, audit
from services.operator.rebuild import _rounds_from_table_events
from services.operator.replay import replay_round
from services.operator.report_render import to_html, to_text
from services.simulators.tables.inputs import InputFactory
from shared.events.bet_events import BetPlaced, BetSettled
from shared.events.inputs import NewShoe, OpenRound
from shared.events.table import RoundOpened
from shared.profile import (
    ProfileDigestError,
    UnknownProfileError,
    check_pin,
    list_profiles,
    load_profile,
    pinned,
    profile_digest,
    round_profile,
    shipped_digest,
    use_profiles_dir,
)
from tests.round_builder import RecordedRound

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def _copy_profiles(to: Path) -> Path:
    """Every shipped profile as its v1 (released snapshots, not released yet in `to`)."""
    to.mkdir()
    for path in DEFAULT_DIR.glob("*.json"):
        shutil.copy(DEFAULT_DIR / "released" / path.stem / "v1.json", to / path.name)
        (to / path.name).chmod(0o644)
    return to


def _edit(folder: Path, name: str, change) -> None:
    path = folder / f"{name}.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2) + "\n")


def _banker_pays_9_to_10(data: dict) -> None:
    data["version"] = 2
    data["bets"]["banker"]["pays"]["win"] = {"num": 9, "den": 10}


@pytest.fixture
def profiles(tmp_path):
    """A copy of the shipped profiles, every one released as v1, then `sbo-baccarat` changed
    as v2 (Banker pays 0.9:1 instead of 0.95:1); the code reads this copy."""
    folder = _copy_profiles(tmp_path / "profiles")
    release(folder)
    _edit(folder, "sbo-baccarat", _banker_pays_9_to_10)
    use_profiles_dir(folder)
    yield folder
    use_profiles_dir(None)


# --- the shipped files: a released version never changes ---------------------------------

def test_issue12_a_released_versions_digest_never_changes():
    """Each released file still has the digest locked when it was released, loads, and every
    released file is locked (run `croupier profiles check` for the same report)."""
    assert check_released(DEFAULT_DIR) == []


def test_issue12_each_current_profile_is_its_released_version_or_a_new_one():
    assert check_current(DEFAULT_DIR) == []
    lock = read_lock(DEFAULT_DIR)
    for name in list_profiles():
        version, digest = pinned(name)
        assert lock.get(name, {}).get(str(version), digest) == digest, (
            f"{name}.json differs from its released v{version}: bump its version")


def test_issue12_every_current_profile_has_a_version():
    for name in list_profiles():
        data = json.loads((DEFAULT_DIR / f"{name}.json").read_text())
        assert isinstance(data.get("version"), int) and load_profile(name).version == data["version"]


# --- releasing -----------------------------------------------------------------------------

def test_issue12_release_snapshots_each_version_once_and_check_sees_tampering(tmp_path):
    folder = _copy_profiles(tmp_path / "p")
    assert check(folder) == []
    first = release(folder)
    assert all("released, digest" in line for line in first) and len(first) == 6
    snapshot = folder / "released" / "sbo-baccarat" / "v1.json"
    assert snapshot.read_text() == (folder / "sbo-baccarat.json").read_text()
    assert read_lock(folder)["sbo-baccarat"] == {"1": profile_digest(json.loads(snapshot.read_text()))}
    assert all("already released, unchanged" in line for line in release(folder))
    assert check(folder) == []

    snapshot.chmod(0o644)  # someone edits a released version in place
    data = json.loads(snapshot.read_text())
    data["bets"]["tie"]["pays"]["win"] = {"num": 9, "den": 1}
    snapshot.write_text(json.dumps(data))
    problems = check(folder)
    assert any("sbo-baccarat v1" in p and "changed" in p for p in problems), problems


def test_issue12_release_refuses_a_changed_profile_that_kept_its_version(tmp_path):
    folder = _copy_profiles(tmp_path / "p")
    release(folder)
    lock_before = (folder / "released" / "lock.json").read_text()
    _edit(folder, "sbo-tiger", lambda d: d["bets"]["tie"].update(max_stake=400_000))
    with pytest.raises(ReleaseError, match=r'sbo-tiger v1 is released .* set "version": 2'):
        release(folder)
    assert any("sbo-tiger v1" in p for p in check(folder))
    assert (folder / "released" / "lock.json").read_text() == lock_before  # nothing written

    _edit(folder, "sbo-tiger", lambda d: d.update(version=2))
    assert any("sbo-tiger v2: released" in line for line in release(folder, ["sbo-tiger"]))
    assert set(read_lock(folder)["sbo-tiger"]) == {"1", "2"} and check(folder) == []
    _edit(folder, "sbo-tiger", lambda d: d.update(version=1))  # back to v1, v1 content: no
    with pytest.raises(ReleaseError, match="sbo-tiger v1 is released"):
        release(folder)
    _edit(folder, "sbo-super-six", lambda d: d.update(version=3))
    release(folder, ["sbo-super-six"])
    _edit(folder, "sbo-super-six", lambda d: d.update(version=2))
    with pytest.raises(ReleaseError, match="versions only go up"):
        release(folder)


def test_issue12_the_release_command(tmp_path):
    folder = _copy_profiles(tmp_path / "p")
    runner = CliRunner()
    done = runner.invoke(cli_app, ["profiles", "release", "--dir", str(folder), "sbo-baccarat"])
    assert done.exit_code == 0 and "sbo-baccarat v1: released" in done.output
    assert runner.invoke(cli_app, ["profiles", "check", "--dir", str(folder)]).exit_code == 0
    _edit(folder, "sbo-baccarat", lambda d: d.update(title="changed"))
    refused = runner.invoke(cli_app, ["profiles", "release", "--dir", str(folder)])
    assert refused.exit_code == 1 and 'set "version": 2' in refused.output
    checked = runner.invoke(cli_app, ["profiles", "check", "--dir", str(folder)])
    assert checked.exit_code == 1 and "sbo-baccarat v1" in checked.output


# --- loading a version ---------------------------------------------------------------------

def test_issue12_old_versions_stay_loadable(profiles):
    v1, v2 = load_profile("sbo-baccarat", 1), load_profile("sbo-baccarat", 2)
    assert (v1.version, v2.version, load_profile("sbo-baccarat").version) == (1, 2, 2)
    assert v1.bets["banker"].pays["win"].num == 19 and v2.bets["banker"].pays["win"].num == 9
    assert pinned("sbo-baccarat") == (2, shipped_digest("sbo-baccarat", 2))
    assert shipped_digest("sbo-baccarat", 1) != shipped_digest("sbo-baccarat", 2)
    # a round recorded before versions existed was played under version 1
    assert round_profile("sbo-baccarat", None) == v1
    with pytest.raises(UnknownProfileError, match="no version 3; shipped versions: 1, 2"):
        load_profile("sbo-baccarat", 3)
    with pytest.raises(ProfileDigestError) as err:
        check_pin("sbo-baccarat", 1, shipped_digest("sbo-baccarat", 2))
    assert shipped_digest("sbo-baccarat", 1) in str(err.value)
    assert shipped_digest("sbo-baccarat", 2) in str(err.value)


def test_issue12_round_opened_records_the_profile_version_and_digest(profiles):
    def key_for(table_id, role):
        return table_key("s", table_id, role)

    clock = ManualClock()
    config = MachineConfig(AdmissionPolicy(key_for), betting_window_override=None)
    make = InputFactory("T1", key_for, clock.now, run_tag="u")
    state, events = TableState("T1"), []
    for inp in (make.make(NewShoe, shoe_id="S1", profile="sbo-baccarat"),
                make.make(OpenRound, round_id="R1", dealer="Ayu")):
        outcome = step(state, inp, clock.now(), config)
        assert outcome.refusal is None, outcome.refusal
        state = outcome.state
        events += outcome.events
    opened = next(e for e in events if isinstance(e, RoundOpened))
    assert (opened.profile_version, opened.profile_digest) == (2, shipped_digest("sbo-baccarat", 2))


def test_issue12_old_records_without_a_version_still_parse():
    rec = RecordedRound(pin=False)
    opened = next(e for e in rec.events if isinstance(e, RoundOpened))
    raw = json.loads(opened.model_dump_json())
    assert "profile_version" not in raw and "profile_digest" not in raw  # as older records
    assert RoundOpened.model_validate(raw).profile_version is None
    assert replay_round("T1", "R1", rec.events, None, rec.result, rec.decisions,
                        rec.settlements, rec.wallet).verdict == "MATCH"


# --- the round's rules, everywhere ---------------------------------------------------------

def _replay(rec: RecordedRound, events=None):
    return replay_round(rec.table_id, rec.round_id, events or rec.events, None, rec.result,
                        rec.decisions, rec.settlements, rec.wallet)


def test_issue12_replay_uses_the_profile_version_the_round_opened_with(profiles):
    rec = RecordedRound(profile_version=1)  # Banker won with 6: 1,000 at 0.95:1 = 1,950
    assert [s.returned for s in rec.settlements] == [1_950, 0, 1_300]
    report = _replay(rec)
    assert report.verdict == "MATCH", report.differences
    assert (report.profile_version, report.profile_digest) == (1, shipped_digest("sbo-baccarat", 1))
    assert [b.expected_returned for b in report.bets] == [1_950, 0, 1_300]
    assert "sbo-baccarat v1 (digest " in to_text(report) and "sbo-baccarat v1" in to_html(report)
    # a round played under v2 is judged by v2
    later = RecordedRound(round_id="R2", profile_version=2)
    assert [s.returned for s in later.settlements] == [1_900, 0, 1_300]
    assert _replay(later).verdict == "MATCH"


def test_issue12_a_legacy_round_replays_with_version_1(profiles):
    rec = RecordedRound(profile_version=1, pin=False)
    report = _replay(rec)
    assert report.verdict == "MATCH", report.differences
    assert report.profile_version == 1 and report.profile_digest is None


def test_issue12_replay_reports_a_digest_that_differs_from_the_shipped_version(profiles):
    rec = RecordedRound(profile_version=1)
    forged = shipped_digest("sbo-baccarat", 2)
    events = []
    for e in rec.events:  # a round that says v1 but was played with other content
        if isinstance(e, RoundOpened):
            e = e.model_copy(update={"profile_digest": forged})
        events.append(e)
    report = _replay(rec, events)
    assert report.verdict == "DIFFERENCES"
    diff = next(d for d in report.differences if d.where.endswith("profile_digest"))
    assert shipped_digest("sbo-baccarat", 1) in diff.expected and forged in diff.recorded


def test_issue12_audit_settles_by_the_version_on_the_result(profiles):
    books = Books()
    for rec in (RecordedRound(profile_version=1), RecordedRound(round_id="R2", profile_version=2,
                                                                 bets=(("c1", "bob", "banker", 1_000),))):
        books.add(rec.result)
        for s in rec.settlements:
            books.add(s)
    check = next(c for c in audit(books).invariants if c.name == "every settlement equals the "
                                                                 "rule engine's")
    assert check.ok, check.problems
    returns = {(r.version, r.bet): r.exact_rtp for r in audit(books).returns}
    assert returns[(1, "banker")] > returns[(2, "banker")]
    # the result claims v1 with v2's content: caught
    books.results[("T1", "R1")] = books.results[("T1", "R1")].model_copy(
        update={"profile_digest": shipped_digest("sbo-baccarat", 2)})
    check = next(c for c in audit(books).invariants if c.name.startswith("every settlement"))
    assert not check.ok and shipped_digest("sbo-baccarat", 1) in check.problems[0]


def test_issue12_game_evaluation_carries_the_version_to_the_result(profiles):
    rec = RecordedRound(profile_version=1)
    view, results, problems = EvaluationState(table_id="T1"), [], []
    for event in rec.events:
        seen = observe(view, event)
        view, problems = seen.view, problems + list(seen.problems)
        results += [seen.result] if seen.result else []
    assert problems == [] and len(results) == 1
    assert (results[0].profile_version, results[0].profile_digest) == (
        1, shipped_digest("sbo-baccarat", 1))
    forged = [e.model_copy(update={"profile_digest": "f" * 64}) if isinstance(e, RoundOpened)
              else e for e in rec.events]
    seen = observe(EvaluationState(table_id="T1", last_seq=1, last_hash=forged[0].hash), forged[1])
    assert seen.problems and "f" * 64 in seen.problems[0]


def test_issue12_bet_settlement_settles_by_the_version_the_round_opened_with(profiles):
    rec = RecordedRound(profile_version=1)
    opened = next(e for e in rec.events if isinstance(e, RoundOpened))
    state, _ = on_table_event(None, opened, NOW)
    assert state.header.profile_version == 1
    bet = BetPlaced(bet_id="b1", player_id="alice", table_id="T1", round_id="R1", bet="banker",
                    stake=1_000, currency="IDR", debit_tx_id="stake_debit:b1",
                    placed_at=rec.t0 + timedelta(seconds=2))
    state, _ = on_bet(state, bet, NOW)
    result = rec.result.model_copy(update={"profile_version": None})  # the header's pin rules
    state, out = on_result(state, result, NOW)
    settled = [r for _, _, r in out if isinstance(r, BetSettled)]
    assert [s.returned for s in settled] == [1_950]  # v1's 0.95:1, not v2's 0.9:1


def test_issue12_rebuild_recomputes_with_the_round_version(profiles):
    rec = RecordedRound(profile_version=1)
    books = Books()
    books.add(rec.result)
    assert _rounds_from_table_events({"T1": rec.events}, books) == (1, [])
    forged = [e.model_copy(update={"profile_digest": "0" * 64}) if isinstance(e, RoundOpened)
              else e for e in rec.events]
    _, differences = _rounds_from_table_events({"T1": forged}, books)
    assert any("T1/R1" in d and "0" * 64 in d for d in differences)


def test_issue12_item8_rebuild_wants_an_annulment_for_every_reversal():
    rec = RecordedRound()
    rec.annul()
    books = Books()
    for record in [rec.result, *rec.settlements]:
        books.add(record)
    assert _rounds_from_table_events({"T1": rec.events}, books) == (1, [])
    _, differences = _rounds_from_table_events({"T1": rec.events[:-1]}, books)
    assert any("reverse:settle:b1" in d and "never annulled" in d for d in differences)


def test_issue12_croupier_rtp_of_a_released_version(profiles):
    runner = CliRunner()

    def banker(*extra: str) -> float:
        done = runner.invoke(cli_app, ["rtp", "--profile", "sbo-baccarat", "--json", *extra])
        assert done.exit_code == 0, done.output
        return json.loads(done.output)["bets"]["banker"]["rtp"]

    assert banker("--profile-version", "1") > banker("--profile-version", "2") == banker()
    missing = runner.invoke(cli_app, ["rtp", "--profile", "sbo-baccarat", "--profile-version", "7"])
    assert missing.exit_code == 2 and "shipped versions: 1, 2" in missing.output
