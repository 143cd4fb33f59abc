"""Writing `operator.actions`: each use of an operator override, recorded before it takes
effect, so the significant-event log (`croupier events`) lists every one. A use whose record
cannot be written does not happen (`ActionNotRecorded`)."""

from __future__ import annotations

from kafka.errors import KafkaError

from services.infra.kafka_clients import durable_producer
from services.infra.kafka_security import OPERATOR, credentials
from shared.events.operator_actions import OperatorAction
from shared.topics import OPERATOR_ACTIONS_TOPIC


class ActionNotRecorded(RuntimeError):
    """The action's record could not be written, so the action was not taken."""


def operator_name(settings) -> str:
    """Who the record says acted: the principal the broker authenticates the writer as."""
    return credentials(OPERATOR, settings)[0]


def record_action(bootstrap: str, action: OperatorAction, settings) -> tuple[int, int]:
    """Write `action` (keyed by its table) and wait for the broker's acknowledgement;
    (partition, offset) where it stands in the log."""
    try:
        producer = durable_producer(bootstrap, OPERATOR, settings)
        try:
            sent = producer.send(OPERATOR_ACTIONS_TOPIC, key=action.table_id.encode(),
                                 value=action.model_dump_json().encode())
            where = sent.get(timeout=30)
        finally:
            producer.close()
    except KafkaError as exc:
        raise ActionNotRecorded(f"{action.type} was not used: its record could not be written "
                                f"to {OPERATOR_ACTIONS_TOPIC} ({type(exc).__name__}: {exc})") from exc
    return where.partition, where.offset
