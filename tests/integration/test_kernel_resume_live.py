"""The kernel resumes an input partition from its own log's checkpoint, never from the
consumer group's commit.

A commit past a record nobody processed (faust-streaming #606, a bug of any client, an
operator's reset) must not lose it: a deposit so passed over would be money never
credited. Here the kernel group's commit is moved past a command by hand, with the wallet
stopped, and behind everything it applied: the restarted worker applies the command it
never read, exactly once, and nothing it applied before a second time.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from kafka import KafkaProducer, TopicPartition

from services.infra.consumer import kernel_group
from services.infra.kafka_security import ADMIN, kafka_python_options
from services.infra.log_reader import read_to_end
from services.infra.own_log import entries_of
from services.wallet.commands import CreateAccount, Deposit, Envelope
from shared.events.wallet_ledger import LedgerEntry
from shared.topics import WALLET_LEDGER_TOPIC, wallet_commands_topic
from tests.conftest import instance_for
from tests.integration.tables_live_support import commit_past, running_services

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("croupier-kernel-resume")


@pytest.fixture(scope="module")
def services(platform_kafka, home):
    with running_services(platform_kafka, home, ["wallet"]) as procs:
        yield procs


def send(bootstrap: str, topic: str, command) -> tuple[int, int]:
    """The command on the commands topic, as the wallet's HTTP view puts it there."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, **kafka_python_options(ADMIN))
    try:
        meta = producer.send(topic, key=command.player_id.encode(),
                             value=Envelope(command=command).model_dump_json().encode()
                             ).get(timeout=30)
        return meta.partition, meta.offset
    finally:
        producer.close()


def deposits(bootstrap: str, player: str) -> list[str]:
    """The deposits the ledger applied for `player`, in order (one entry each)."""
    out = []
    for record in read_to_end(bootstrap, WALLET_LEDGER_TOPIC, principal=ADMIN):
        for entry in entries_of(record.value, LedgerEntry.model_validate_json):
            if entry.account.player_id == player and entry.tx is not None \
                    and entry.tx.kind == "deposit":
                out.append(entry.tx.tx_id)
    return out


def wait_deposits(bootstrap: str, player: str, wanted: int, why: str) -> list[str]:
    deadline = time.monotonic() + 60
    while len(found := deposits(bootstrap, player)) < wanted:
        assert time.monotonic() < deadline, f"{found}: {why}"
        time.sleep(0.5)
    return found


def test_a_command_the_group_committed_past_is_applied_once_after_restart(
        services, platform_kafka, home):
    wallet, player = services["wallet"], f"p-{uuid.uuid4().hex[:6]}"
    commands = wallet_commands_topic(instance_for(home))
    send(platform_kafka, commands, CreateAccount(player_id=player, currency="IDR"))
    send(platform_kafka, commands, Deposit(player_id=player, request_id="d1", amount=100))
    wait_deposits(platform_kafka, player, 1, "a running wallet")
    wallet.stop()

    # a deposit the stopped wallet never read, and the kernel group's commit past it
    partition, skipped = send(platform_kafka, commands,
                              Deposit(player_id=player, request_id="d2", amount=200))
    group = kernel_group(instance_for(home), "wallet")
    commit_past(platform_kafka, group, TopicPartition(commands, partition), skipped + 1)

    wallet.start()
    wallet.wait_ready(90)
    send(platform_kafka, commands, Deposit(player_id=player, request_id="d3", amount=300))
    found = wait_deposits(platform_kafka, player, 3, f"offset {skipped}, committed past")
    assert sorted(found) == ["deposit:d1", "deposit:d2", "deposit:d3"]  # each once

    # and a commit far behind what the ledger applied replays nothing
    wallet.stop()
    commit_past(platform_kafka, group, TopicPartition(commands, partition), 0)
    wallet.start()
    wallet.wait_ready(90)
    send(platform_kafka, commands, Deposit(player_id=player, request_id="d4", amount=400))
    found = wait_deposits(platform_kafka, player, 4, "after a commit behind")
    assert sorted(found) == ["deposit:d1", "deposit:d2", "deposit:d3", "deposit:d4"]
