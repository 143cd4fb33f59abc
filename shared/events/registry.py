"""Which event models travel on which topic, and their JSON Schemas.

`croupier schemas` writes these to `schemas/`; a test fails when the committed
files drift from the models, so other systems can trust `schemas/`.
"""

from __future__ import annotations

import json

from pydantic import BaseModel

from shared.events.bet_events import (
    BetAccepted,
    BetPlaced,
    BetRejected,
    BetSettled,
    IntakeMark,
    RoundManifest,
    SettlementReversed,
)
from shared.events.dead_letters import DeadLetter
from shared.events.inputs import INPUT_TYPES
from shared.events.rejections import InputRefused
from shared.events.results import RoundResultPublished
from shared.events.table import TABLE_EVENT_TYPES
from shared.events.wallet_events import WalletTransaction

EVENTS_BY_TOPIC: dict[str, tuple[type[BaseModel], ...]] = {
    "dealer.inputs": INPUT_TYPES,
    "table.events": TABLE_EVENT_TYPES,
    "dealer.rejections": (InputRefused,),
    "round.results": (RoundResultPublished,),
    "bets.placed": (BetPlaced, IntakeMark),
    "bets.decisions": (BetAccepted, BetRejected, RoundManifest),
    "bets.settled": (BetSettled, SettlementReversed),
    "wallet.transactions": (WalletTransaction,),
    "dead.letters": (DeadLetter,),
}


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
