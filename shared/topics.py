"""The topic catalogue: every Kafka topic of the platform, its key and its configs.

Pure data. `services.infra.topic_admin` applies it to a live cluster. Retention
is a setting but never below 24 hours: complaints may be filed up to 24 hours
after a round, and the replay needs the log to still hold that round.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS
MIN_RETENTION_MS = DAY_MS
DEFAULT_RETENTION_MS = 7 * DAY_MS
DEFAULT_SEGMENT_MS = 6 * HOUR_MS
DEFAULT_PARTITIONS = 4


# Every topic's name, once: the catalogue below (and the ACLs built from it), the event
# registry and every reader and writer use these constants, never a quoted name
# (tests/unit/test_topic_names.py keeps it so).
DEALER_INPUTS_TOPIC = "dealer.inputs"
TABLE_EVENTS_TOPIC = "table.events"
TABLE_CORRECTIONS_TOPIC = "table.corrections"
DEALER_REJECTIONS_TOPIC = "dealer.rejections"
ROUND_RESULTS_TOPIC = "round.results"
BETS_PLACED_TOPIC = "bets.placed"
BETS_DECISIONS_TOPIC = "bets.decisions"
BETS_SETTLED_TOPIC = "bets.settled"
WALLET_TRANSACTIONS_TOPIC = "wallet.transactions"
WALLET_OPERATOR_CALLS_TOPIC = "wallet.operator_calls"
EVALUATION_LOG_TOPIC = "evaluation.log"
WALLET_LEDGER_TOPIC = "wallet.ledger"
SETTLEMENT_LOG_TOPIC = "settlement.log"
DEAD_LETTERS_TOPIC = "dead.letters"
OPERATOR_ACTIONS_TOPIC = "operator.actions"
WALLET_ENDINGS_TOPIC = "wallet.endings"
DEALER_LOG_TOPIC = "dealer.log"


def snapshot_topic(own_log_topic: str) -> str:
    """The compacted topic holding snapshots of an own log's folded partitions."""
    return f"{own_log_topic}.snapshots"


WALLET_LEDGER_SNAPSHOTS_TOPIC = snapshot_topic(WALLET_LEDGER_TOPIC)


def wallet_commands_topic(instance: str) -> str:
    """The wallet's private commands topic of one platform instance (not in the catalogue:
    the wallet creates it, one per instance)."""
    return f"{instance}-wallet-commands"


class RetentionTooShortError(ValueError):
    """Raised when a retention below the 24-hour dispute window is asked for."""


# The principals (Kafka users) the catalogue grants topics to: the four services by their
# names, the table devices and the operator (services/infra/kafka_security.py gives each its
# credentials, and derives the broker's ACLs from `writers` and `readers` below).
TABLE_DEVICE = "table-device"
OPERATOR = "operator"
_EVERY_SERVICE = ("dealer-event", "game-evaluation", "bet-settlement", "wallet")


class TopicSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    key: str = Field(description="What the record key is; it decides ordering.")
    writers: tuple[str, ...] = Field(description="The principals allowed to write the topic "
                                                 "(the broker refuses anyone else).")
    readers: tuple[str, ...] = Field(description="The services that consume it or fold their "
                                                 "state from it; the operator reads every topic.")
    carries: str
    partitions: int = Field(gt=0)
    replication: int = Field(default=1, gt=0, description="Copies of every partition.")
    configs: dict[str, str]


# (name, key, writers, readers, what it carries): readers are the services; the operator
# reads every topic (replay, rebuild, reconcile, dead letters, the significant-event log)
_Row = tuple[str, str, tuple[str, ...], tuple[str, ...], str]
_TOPICS: tuple[_Row, ...] = (
    # dealer-event also puts what POST /inputs receives on dealer.inputs (it then decides it
    # like any device input), so it is the one service that writes it besides devices
    (DEALER_INPUTS_TOPIC, "table id", (TABLE_DEVICE, "dealer-event"), ("dealer-event",),
     "raw card scans and commands (untrusted)"),
    (TABLE_EVENTS_TOPIC, "table id", ("dealer-event",), _EVERY_SERVICE,
     "shoe, round, card, burn and void events; hash-chained per table"),
    # the index of corrections after the fact: a replay reads this rare-record topic for a
    # round's corrections instead of the table's events after the round
    # (docs/decisions/replay.md, "Corrections by their index")
    (TABLE_CORRECTIONS_TOPIC, "table id", ("dealer-event",), (),
     "each round_corrected again, the very signed event table.events carries, published "
     "from the same dealer.log entry"),
    (DEALER_REJECTIONS_TOPIC, "table id", ("dealer-event",), ("dealer-event",),
     "every refused input with its reason"),
    (ROUND_RESULTS_TOPIC, "table id", ("game-evaluation",), ("bet-settlement",),
     "hands, points, ranks, winner, every fact a bet needs"),
    (BETS_PLACED_TOPIC, "table id", ("wallet",), ("bet-settlement",), "a funded bet (stake already debited)"),
    (BETS_DECISIONS_TOPIC, "table id", ("bet-settlement",), (),
     "accepted or rejected (with reason); round manifests when betting closes"),
    (BETS_SETTLED_TOPIC, "table id", ("bet-settlement",), (),
     "one settlement per accepted bet: win, lose, push or void refund"),
    (WALLET_TRANSACTIONS_TOPIC, "player id", ("wallet",), (),
     "every debit, credit and refund, with its idempotency key"),
    (WALLET_OPERATOR_CALLS_TOPIC, "player id", ("wallet",), (),
     "seamless mode: each call to the operator's wallet (debit, credit, rollback) with its "
     "answer, once answered"),
    (DEALER_LOG_TOPIC, "table id (partition: the input's)", ("dealer-event",),
     ("dealer-event",),  # its own state: folded on every assignment
     "dealer-event's source of truth: one chained entry per decided input (and per timer "
     "tick that moved a table), with the table events and the refusal it publishes and "
     "the input's offset"),
    (EVALUATION_LOG_TOPIC, "table id (partition: the table event's)", ("game-evaluation",),
     ("game-evaluation",),  # its own state: folded on every assignment
     "game-evaluation's source of truth: one chained entry per table event that changed a "
     "table's progress, with the table's state after it, its result and the event's offset"),
    (WALLET_LEDGER_TOPIC, "player id (partition: the command's)", ("wallet",), ("wallet",),
     "the wallet's source of truth: one chained entry per applied command, with the "
     "account, bet and spot after it and the command's input offset"),
    (SETTLEMENT_LOG_TOPIC, "table id (partition: the input record's)", ("bet-settlement",),
     ("bet-settlement",),  # likewise
     "bet-settlement's source of truth: chained entries of what each applied record "
     "changed (rounds' headers, bet entries, spot totals, chain watch) and publishes"),
    (DEAD_LETTERS_TOPIC, "source topic and partition", _EVERY_SERVICE, (),
     "records a service could not apply: where from, the error, the bytes or their digest"),
    (OPERATOR_ACTIONS_TOPIC, "table id", (OPERATOR,), (),
     "each complaint filed, stamped with the platform's clock, and each use of an "
     "operator power the rules do not grant by themselves (a late complaint's window "
     "overridden): who, why, which round; the significant-event log lists the overrides"),
)

TOPIC_NAMES: tuple[str, ...] = tuple(name for name, *_ in _TOPICS)

# Records of the topics above again, keyed for the service that applies them, so that it
# reads them on the partition of its own log and no hop re-keys them: derived (their writer
# publishes them from its own log's outbox), so neither events of their own nor archived
# (the archive keeps the originals).
_ROUTED_TOPICS: tuple[_Row, ...] = (
    (WALLET_ENDINGS_TOPIC, "player id", ("bet-settlement",), ("wallet",),
     "the endings of bets the wallet applies (settlements, voids' refunds, rejections, "
     "settlements reversed: the very records bets.settled and bets.decisions carry), "
     "packed by the partition of their players' ledgers (services/infra/packs.py), so "
     "the wallet reads them there"),
)
ROUTED_TOPICS: tuple[str, ...] = tuple(name for name, *_ in _ROUTED_TOPICS)

# Snapshots of an own log's folded partitions (services/infra/snapshots.py): a cache that
# bounds a recovery's time, verified against the log before use, so not a source of truth,
# not events (no schema), not archived; compacted, a snapshot's writer tombstoning the one
# before it, so each partition keeps about one or two.
_SNAPSHOT_TOPICS: tuple[_Row, ...] = (
    (WALLET_LEDGER_SNAPSHOTS_TOPIC, "<ledger partition>/<snapshot id>/c/<n> (chunks), "
     "<ledger partition>/m/<snapshot id> (manifest); partition: the ledger's", ("wallet",), ("wallet",),
     "snapshots of wallet.ledger's folded partitions: chunks of at most 256 KB, then a "
     "manifest (their sha256, the stamp: head offset and id, end, input checkpoints)"),
)
SNAPSHOT_TOPICS: tuple[str, ...] = tuple(name for name, *_ in _SNAPSHOT_TOPICS)
SNAPSHOT_CONFIGS: dict[str, str] = {
    "cleanup.policy": "compact",
    # only a closed segment is compacted: roll often, so the records a recovery reads stay
    # about the live snapshots
    "segment.ms": str(10 * 60_000),
    "segment.bytes": str(64 * 1024 * 1024),
    "min.cleanable.dirty.ratio": "0.1",
    "delete.retention.ms": str(DAY_MS),  # tombstones outlive any read that began before
    "message.timestamp.type": "CreateTime",
}
# every topic `croupier topics apply` creates: the events' and the snapshots'
CATALOGUE_NAMES: tuple[str, ...] = TOPIC_NAMES + ROUTED_TOPICS + SNAPSHOT_TOPICS


def min_insync_replicas(replication: int) -> int:
    """How many copies an acknowledged write (acks=all) must be on: 2 once there are 3 or
    more, so a write survives the loss of any one node and a partition stays writable
    while one of its three replicas is down; with fewer copies, all that exist but one."""
    return 2 if replication >= 3 else max(1, replication - 1)


def durability_configs(replication: int) -> dict[str, str]:
    """The configs every topic takes for its replication factor: a write is acknowledged
    once it is on `min.insync.replicas` copies, and a replica that missed writes never
    becomes leader (an unclean election would drop acknowledged records)."""
    return {"min.insync.replicas": str(min_insync_replicas(replication)),
            "unclean.leader.election.enable": "false"}


def validate_retention(retention_ms: int) -> int:
    if retention_ms < MIN_RETENTION_MS:
        raise RetentionTooShortError(
            f"retention.ms={retention_ms} is below 24 hours ({MIN_RETENTION_MS} ms): "
            "complaints may be filed up to 24 hours after a round, so the log must keep "
            "at least that long"
        )
    return retention_ms


def topic_catalogue(
    retention_ms: int = DEFAULT_RETENTION_MS,
    partitions: int = DEFAULT_PARTITIONS,
    segment_ms: int = DEFAULT_SEGMENT_MS,
    replication: int = 1,
) -> tuple[TopicSpec, ...]:
    """Every topic with its declared configs. Table-keyed topics share one partition
    count so that a table's events, bets and results are co-partitioned. `replication`:
    the settings' replication factor (never a literal: `Settings.replication_factor`)."""
    validate_retention(retention_ms)
    if partitions < 1:
        raise ValueError(f"partitions must be at least 1, got {partitions}")
    if replication < 1:
        raise ValueError(f"replication must be at least 1, got {replication}")
    durable = durability_configs(replication)
    configs = {
        "retention.ms": str(retention_ms),
        "cleanup.policy": "delete",
        "segment.ms": str(min(segment_ms, retention_ms)),
        "message.timestamp.type": "CreateTime",
        **durable,
    }
    return tuple(
        TopicSpec(name=name, key=key, writers=writers, readers=readers, carries=carries,
                  partitions=partitions, replication=replication,
                  configs={**configs, **SOURCE_OF_TRUTH.get(name, {}), **INDEXES.get(name, {})})
        for name, key, writers, readers, carries in _TOPICS + _ROUTED_TOPICS
    ) + tuple(
        TopicSpec(name=name, key=key, writers=writers, readers=readers, carries=carries,
                  partitions=partitions, replication=replication,
                  configs={**SNAPSHOT_CONFIGS, **durable})
        for name, key, writers, readers, carries in _SNAPSHOT_TOPICS
    )


# A service's own log is its state: every record of it is needed to fold that state, so it
# is never deleted by time (docs/decisions/ledger.md); the archive keeps the other topics'
# history beyond their retention. The broker stamps each of its records with the time it
# appended it: the fold's clock never runs ahead of it, whatever a writer's clock says
# (`own_log.entry_time`).
KEPT_FOREVER: dict[str, str] = {"retention.ms": "-1", "retention.bytes": "-1"}
OWN_LOG: dict[str, str] = {**KEPT_FOREVER, "message.timestamp.type": "LogAppendTime"}
SOURCE_OF_TRUTH: dict[str, dict[str, str]] = {
    DEALER_LOG_TOPIC: OWN_LOG,
    EVALUATION_LOG_TOPIC: OWN_LOG,
    WALLET_LEDGER_TOPIC: OWN_LOG,
    SETTLEMENT_LOG_TOPIC: OWN_LOG,
}
# An index is read for what it holds since a time: it is complete only if no record of it is
# ever deleted, so it is kept forever too (a handful of corrections a day: small). A replay
# trusts `table.corrections` for a round only where its partition still begins at offset 0
# or before the round (services/operator/round_reader.py); otherwise it scans table.events.
INDEXES: dict[str, dict[str, str]] = {
    TABLE_CORRECTIONS_TOPIC: KEPT_FOREVER,
}
