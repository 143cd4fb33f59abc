"""The wallet's endings forwarder resumes `bets.settled` from its own checkpoints, not from
the group's commit.

faust-streaming can commit past a record nobody processed (upstream #606): an ending so
passed over would be a credit never paid. Here the group's commit is moved past an ending by
hand, with the wallet stopped: the restarted worker still forwards that ending, because its
checkpoints on `<instance>-wallet-forwarded` say where its forwarding stopped
(services/wallet/forwarded.py).
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from kafka import KafkaProducer, TopicPartition

from croupier.services.infra.kafka_security import ADMIN, kafka_python_options
from croupier.services.infra.log_reader import read_to_end
from croupier.shared.events.bet_events import BetSettled
from tests.conftest import instance_for
from tests.integration.tables_live_support import commit_past, running_services

pytestmark = pytest.mark.kafka
PARTITION = 0


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("croupier-forwarder")


@pytest.fixture(scope="module")
def services(platform_kafka, home):
    with running_services(platform_kafka, home, ["wallet"]) as procs:
        yield procs


def ending(run: str, n: int) -> BetSettled:
    """A bet's settlement on bets.settled (the wallet never debited it: its command is
    refused `unknown_bet`, which is all this test needs: the command itself)."""
    return BetSettled(bet_id=f"{run}-b{n}", player_id=f"{run}-p", table_id=f"{run}-T",
                      round_id="R1", bet="player", stake=1000, currency="IDR",
                      settlement_id=f"settle:{run}-b{n}", outcome="win", returned=2000,
                      cause=f"result:{run}-T:R1", settled_at=datetime.now(UTC))


def send(bootstrap: str, record: BetSettled) -> int:
    producer = KafkaProducer(bootstrap_servers=bootstrap, **kafka_python_options(ADMIN))
    try:
        meta = producer.send("bets.settled", key=record.table_id.encode(), partition=PARTITION,
                             value=record.model_dump_json().encode()).get(timeout=30)
        return meta.offset
    finally:
        producer.close()


def forwarded(bootstrap: str, commands: str, bet_id: str) -> bool:
    needle = f'"bet_id":"{bet_id}"'.encode()
    return any(needle in (r.value or b"") for r in read_to_end(bootstrap, commands,
                                                                principal=ADMIN))


def wait_forwarded(bootstrap: str, commands: str, bet_id: str, why: str) -> None:
    deadline = time.monotonic() + 45
    while not forwarded(bootstrap, commands, bet_id):
        assert time.monotonic() < deadline, f"ending of {bet_id} never forwarded: {why}"
        time.sleep(0.5)


def test_an_ending_the_group_committed_past_is_still_forwarded_after_restart(
        services, platform_kafka, home):
    wallet, run = services["wallet"], uuid.uuid4().hex[:6]
    commands = f"{instance_for(home)}-wallet-commands"
    send(platform_kafka, ending(run, 1))
    wait_forwarded(platform_kafka, commands, f"{run}-b1", "a running wallet")
    wallet.stop()

    # an ending the stopped wallet never read, and the group's commit moved past it
    skipped = send(platform_kafka, ending(run, 2))
    commit_past(platform_kafka, f"{instance_for(home)}-wallet",
                 TopicPartition("bets.settled", PARTITION), skipped + 1)

    wallet.start()
    wallet.wait_ready(90)
    send(platform_kafka, ending(run, 3))  # after the commit: the stream hands it on
    wait_forwarded(platform_kafka, commands, f"{run}-b3", "the ending after the commit")
    wait_forwarded(platform_kafka, commands, f"{run}-b2",
                   f"offset {skipped} of bets.settled[{PARTITION}], committed past")
