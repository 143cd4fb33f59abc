"""Issue 12 item 8 against the real broker: a settled round annulled minutes later replays with
its original settlements, their reversals, the refunds and the annulment (`--annulled-within`),
and each round is replayed under the profile version it opened with."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from shared.profile import pinned
from tests.integration.replay_support import apply_topics, croupier, produce_rounds, replay_args
from tests.round_builder import RecordedRound

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module")
def annulled(platform_kafka):
    apply_topics(platform_kafka)
    run = uuid.uuid4().hex[:6]
    rec = RecordedRound(table_id=f"A{run}", round_id=f"R-{run}", t0=datetime.now(UTC),
                        bets=((f"b1-{run}", f"alice-{run}", "banker", 1_000),
                              (f"b2-{run}", f"bob-{run}", "player", 500)))
    rec.annul(after=timedelta(minutes=3))  # past the 2 minutes a replay reads by default
    produce_rounds(platform_kafka, [rec])
    return rec


def test_issue12_item8_an_annulled_round_replays_with_settlement_reversal_and_refund(
        platform_kafka, annulled):
    done = croupier(platform_kafka, *replay_args(annulled, "--annulled-within", "10",
                                                  "--format", "json"))
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["verdict"] == "MATCH" and report["status"] == "annulled"
    assert "card_exposed" in report["annul_reason"]
    assert report["timeline"][-1]["what"] == "round_annulled"
    assert [(b["returned"], b["reversed"], b["refund"]) for b in report["bets"]] == [
        (1_950, 1_950, 1_000), (0, 0, 500)]
    # the version the round opened with: the current one (RecordedRound pins it)
    assert report["profile_version"] == pinned("sbo-baccarat")[0] and report["profile_digest"]
    text = croupier(platform_kafka, *replay_args(annulled, "--annulled-within", "10"))
    assert "ANNULLED after completion by Sari" in text.stdout
    assert "payout_reversal 1950" in text.stdout


def test_issue12_item8_without_looking_further_the_round_reads_as_it_completed(
        platform_kafka, annulled):
    done = croupier(platform_kafka, *replay_args(annulled, "--format", "json"))
    report = json.loads(done.stdout)
    assert report["status"] == "completed" and report["annul_reason"] is None
