"""Which event models travel on which topic, and their JSON Schemas.

`croupier schemas` writes these to `schemas/`; a test fails when the committed
files drift from the models, so other systems can trust `schemas/`.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Annotated, Any, get_args, get_origin

from pydantic import BaseModel, TypeAdapter

from shared.events.bet_events import BetDecision, BetEnding, BetIntake, EndingsPack
from shared.events.dead_letters import DeadLettersRecord
from shared.events.dealer_log import DealerEntry
from shared.events.evaluation_log import EvaluationEntry
from shared.events.inputs import DealerInput, TimerTick
from shared.events.operator_actions import OperatorAction
from shared.events.operator_wallet import OperatorCallRecord
from shared.events.rejections import InputRefused
from shared.events.results import RoundResultPublished
from shared.events.settlement_log import SettlementEntry
from shared.events.table import RoundCorrected, TableEvent
from shared.events.wallet_events import WalletTransaction
from shared.events.wallet_ledger import LedgerEntry
from shared.topics import (
    BETS_DECISIONS_TOPIC,
    BETS_PLACED_TOPIC,
    BETS_SETTLED_TOPIC,
    DEAD_LETTERS_TOPIC,
    DEALER_INPUTS_TOPIC,
    DEALER_LOG_TOPIC,
    DEALER_REJECTIONS_TOPIC,
    EVALUATION_LOG_TOPIC,
    OPERATOR_ACTIONS_TOPIC,
    ROUND_RESULTS_TOPIC,
    SETTLEMENT_LOG_TOPIC,
    TABLE_CORRECTIONS_TOPIC,
    TABLE_EVENTS_TOPIC,
    WALLET_ENDINGS_TOPIC,
    WALLET_LEDGER_TOPIC,
    WALLET_OPERATOR_CALLS_TOPIC,
    WALLET_TRANSACTIONS_TOPIC,
)

# topic -> what one record of it is: a model, or a discriminated union of models. The one
# map of which events travel where; readers parse through `topic_adapter`.
TOPIC_TYPES: dict[str, Any] = {
    DEALER_INPUTS_TOPIC: DealerInput | TimerTick,  # devices' inputs, dealer-event's ticks
    TABLE_EVENTS_TOPIC: TableEvent,
    TABLE_CORRECTIONS_TOPIC: RoundCorrected,  # the index of corrections: table.events' own
    DEALER_REJECTIONS_TOPIC: InputRefused,
    ROUND_RESULTS_TOPIC: RoundResultPublished,
    BETS_PLACED_TOPIC: BetIntake,  # funded bets and the wallet's intake marks
    BETS_DECISIONS_TOPIC: BetDecision,
    BETS_SETTLED_TOPIC: BetEnding,  # settlements and their reversals
    WALLET_TRANSACTIONS_TOPIC: WalletTransaction,
    WALLET_OPERATOR_CALLS_TOPIC: OperatorCallRecord,
    DEALER_LOG_TOPIC: DealerEntry,
    EVALUATION_LOG_TOPIC: EvaluationEntry,
    WALLET_LEDGER_TOPIC: LedgerEntry,
    SETTLEMENT_LOG_TOPIC: SettlementEntry,
    DEAD_LETTERS_TOPIC: DeadLettersRecord,  # dead letters and their re-drives
    OPERATOR_ACTIONS_TOPIC: OperatorAction,  # the operator's uses of what the rules do not do
    WALLET_ENDINGS_TOPIC: EndingsPack,  # bet-settlement's endings packed by the wallet's partition
}


def _models(record_type: Any) -> tuple[type[BaseModel], ...]:
    """The models a record type names: a model, `Annotated[A | B | ..., Field(...)]`, or a
    union of those."""
    if isinstance(record_type, type) and issubclass(record_type, BaseModel):
        return (record_type,)
    if get_origin(record_type) is Annotated:
        return _models(get_args(record_type)[0])
    return tuple(model for member in get_args(record_type) for model in _models(member))


EVENTS_BY_TOPIC: dict[str, tuple[type[BaseModel], ...]] = {
    topic: _models(record_type) for topic, record_type in TOPIC_TYPES.items()
}


@cache
def topic_adapter(topic: str) -> TypeAdapter[Any]:
    """Parses one record of `topic` into its event model."""
    return TypeAdapter(TOPIC_TYPES[topic])


def _type_name(model: type[BaseModel]) -> str:
    fields = model.model_fields
    for discriminator in ("type", "command"):
        if discriminator in fields:
            return str(fields[discriminator].default)
    return model.__name__


def schema_files() -> dict[str, str]:
    """Relative path -> JSON text, one file per event type: `<topic>/<type>.json`."""
    files: dict[str, str] = {}
    for topic, models in EVENTS_BY_TOPIC.items():
        for model in models:
            schema = model.model_json_schema(mode="serialization")
            schema["$id"] = f"croupier/{topic}/{_type_name(model)}.json"
            schema["x-topic"] = topic
            files[f"{topic}/{_type_name(model)}.json"] = json.dumps(schema, indent=2,
                                                                    sort_keys=True) + "\n"
    return files
