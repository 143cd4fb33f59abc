"""Reading `dead.letters` and re-driving one: the one implementation `croupier dead-letters`
and the operator's console share. A re-drive puts the dead letter's original record (key
and value) back on its topic, then records who did it and where the record landed
(`DeadLetterRedriven`, on `dead.letters` itself), so the significant-event log shows it."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pydantic import TypeAdapter

from services.infra.kafka_clients import durable_producer
from services.infra.kafka_security import ADMIN
from services.infra.log_reader import read_to_end
from shared.events.dead_letters import DeadLetter, DeadLetterRedriven, DeadLettersRecord
from shared.topics import DEAD_LETTERS_TOPIC

_RECORD: TypeAdapter[DeadLetter | DeadLetterRedriven] = TypeAdapter(DeadLettersRecord)


class RedriveError(ValueError):
    """A dead letter that cannot be re-driven: unknown, or kept only as its digest."""


@dataclass
class DeadLetters:
    """Every dead letter still in the log, by id (a record dead-lettered twice, say after a
    crash, is one dead letter), and the re-drives of each, oldest first."""

    letters: dict[str, DeadLetter] = field(default_factory=dict)
    redrives: dict[str, list[DeadLetterRedriven]] = field(default_factory=dict)


def read_dead_letters(bootstrap: str) -> DeadLetters:
    """Raises LogReadError when the log cannot be read."""
    found = DeadLetters()
    for record in read_to_end(bootstrap, DEAD_LETTERS_TOPIC):
        item = _RECORD.validate_json(record.value)
        if isinstance(item, DeadLetter):
            found.letters[item.dead_letter_id] = item
        else:
            found.redrives.setdefault(item.dead_letter_id, []).append(item)
    return found


def redrive(bootstrap: str, letter: DeadLetter, by: str, reason: str = "",
            now: datetime | None = None) -> DeadLetterRedriven:
    """Put `letter`'s record back on its topic and record the re-drive (admin: the record
    goes back on a topic its owner writes). Returns the re-drive as recorded."""
    if letter.value_b64 is None:
        raise RedriveError(f"{letter.dead_letter_id}: its value was {letter.value_size} bytes, "
                           f"kept only as its digest {letter.value_sha256}; it cannot be "
                           "re-driven from here")
    key = None if letter.key_b64 is None else base64.b64decode(letter.key_b64)
    producer = durable_producer(bootstrap, ADMIN)
    try:
        where = producer.send(letter.topic, key=key,
                              value=base64.b64decode(letter.value_b64)).get(timeout=30)
        done = DeadLetterRedriven(dead_letter_id=letter.dead_letter_id, topic=letter.topic,
                                  partition=where.partition, offset=where.offset, by=by,
                                  reason=reason[:2000], occurred_at=now or datetime.now(UTC))
        producer.send(DEAD_LETTERS_TOPIC, key=f"{letter.topic}:{letter.partition}".encode(),
                      value=done.model_dump_json().encode()).get(timeout=30)
    finally:
        producer.close()
    return done
