"""Bets: `bets.placed` (wallet), `bets.decisions` and `bets.settled` (bet-settlement).

Ids are deterministic so every consumer can be idempotent: a bet's id is the
client's, its settlement's id is derived from it, and a manifest's from the round.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Annotated, Literal

from pydantic import AwareDatetime, Field, TypeAdapter, model_validator

from shared.bets import Position
from shared.events.ids import BetId
from shared.models import FrozenModel


def settlement_id(bet_id: str, correction: int = 0) -> str:
    """A bet's settlement id; its settlement again after the round's n-th correction has an
    id of its own (the original, reversed, stands in the log beside it)."""
    return f"settle:{bet_id}" if correction == 0 else f"settle:{bet_id}:c{correction}"


def reversal_id(original_settlement_id: str) -> str:
    """The id of the record that takes an original settlement back (a management void)."""
    return f"reverse:{original_settlement_id}"


def annul_refund_id(bet_id: str) -> str:
    """The settlement id of the stake refund that follows a reversal: distinct from the
    original settlement's (`settle:<bet>`), so both stand in the log."""
    return f"annul-refund:{bet_id}"


DIGEST_MODULUS = 2 ** 256
EMPTY_DIGEST = "0" * 64  # the digest of a round with no accepted bet


def _bet_hash(bet_id: str) -> int:
    return int.from_bytes(hashlib.sha256(bet_id.encode()).digest(), "big")


def digest_add(digest: str, bet_id: str) -> str:
    """`digest` with one more accepted bet id: a manifest digest kept one bet at a time."""
    return f"{(int(digest, 16) + _bet_hash(bet_id)) % DIGEST_MODULUS:064x}"


def manifest_digest(bet_ids: Iterable[str]) -> str:
    """The accepted bet ids' digest, independent of their order: the sum of the SHA-256 of
    each id, mod 2^256, as 64 hex digits (a multiset hash). Order-independent and additive,
    so bet-settlement keeps it with `digest_add` as bets are accepted, and an auditor
    recomputes it from the decisions in whatever order it reads them."""
    return f"{sum(_bet_hash(bet_id) for bet_id in bet_ids) % DIGEST_MODULUS:064x}"


class BetFacts(FrozenModel):
    """What every bet event repeats, so each record stands on its own in a replay."""


    schema_version: Literal[1] = 1
    bet_id: BetId
    player_id: str
    table_id: str
    round_id: str
    bet: str
    position: Position | None = None
    stake: int = Field(gt=0, description="Minor units.")
    currency: str


class IntakeMark(FrozenModel):
    """A wallet worker's progress marker on `bets.placed` (keyed by table id), written once
    it has seen the round's BettingClosed: every bet it stamped before `through` is earlier
    in this partition, every bet it stamps from now on is stamped after `through`. The
    `partitions` are the wallet-commands partitions (players) the worker owns; when the
    marks of a round cover all `partition_count` of them, bet-settlement knows every bet
    placed before the close is in hand and writes the round's manifest."""


    schema_version: Literal[1] = 1
    type: Literal["intake_mark"] = "intake_mark"
    table_id: str
    round_id: str
    partitions: tuple[int, ...] = Field(description="Wallet-commands partitions covered.")
    partition_count: int = Field(ge=1)
    worker: str
    through: AwareDatetime


class BetPlaced(BetFacts):
    type: Literal["bet_placed"] = "bet_placed"
    debit_tx_id: str
    placed_at: AwareDatetime
    # the seq of the RoundOpened the wallet's door saw on table.events: bet-settlement
    # waits for that event however late it reads it, and knows the round never opened
    # once its chain passed that seq without it (absent in older records)
    opened_seq: int | None = Field(default=None, ge=1, exclude_if=lambda v: v is None)


class BetAccepted(BetFacts):
    type: Literal["bet_accepted"] = "bet_accepted"
    decided_at: AwareDatetime


class BetRejected(BetFacts):
    type: Literal["bet_rejected"] = "bet_rejected"
    reason_code: str
    message: str
    decided_at: AwareDatetime


class RoundManifest(FrozenModel):
    """Written once when betting closes: the accepted bets the round will settle."""


    schema_version: Literal[1] = 1
    type: Literal["round_manifest"] = "round_manifest"
    table_id: str
    round_id: str
    bet_count: int = Field(ge=0)
    total_stake: int = Field(ge=0)
    digest: str
    closed_at: AwareDatetime


BetIntake = Annotated[BetPlaced | IntakeMark, Field(discriminator="type")]
BET_INTAKE: TypeAdapter[BetIntake] = TypeAdapter(BetIntake)

BetDecision = Annotated[BetAccepted | BetRejected | RoundManifest, Field(discriminator="type")]


class BetSettled(BetFacts):
    type: Literal["bet_settled"] = "bet_settled"
    settlement_id: str
    outcome: Literal["win", "lose", "push", "void_refund"]
    returned: int = Field(ge=0, description="Minor units credited back: stake + winnings, "
                                            "the stake on a push or void, 0 on a loss.")
    cause: str = Field(description="The round result id, or 'void:<table>:<round>'.")
    settled_at: AwareDatetime
    result_at: AwareDatetime | None = Field(
        default=None, description="When the round's result (or void) was published: the "
                                  "start of settlement latency. Absent in older records.")
    last_card_at: AwareDatetime | None = Field(
        default=None, description="When the round's last card was scanned (results only).")
    last_of_round: bool = Field(
        default=False, description="True on exactly one settlement of each round's batch: "
                                   "the wallet measures the round's latency when it applies it.")


class SettlementReversed(BetFacts):
    """A management void after completion (RoundAnnulled) takes a settled bet's return
    back: a compensating record, never an edit of the original. Published on `bets.settled`
    before the bet's `void_refund` BetSettled (settlement id `annul-refund:<bet>`)."""

    type: Literal["settlement_reversed"] = "settlement_reversed"
    reversal_id: str = Field(description="reverse:<original settlement id>")
    settlement_id: str = Field(description="The original settlement this takes back.")
    original_outcome: Literal["win", "lose", "push", "void_refund"]
    amount: int = Field(ge=0, description="Minor units taken back: what the original "
                                          "settlement returned (0 for a loss).")
    reason_code: str
    reason_text: str
    supervisor: str
    cause: str = Field(description="'annul:<table>:<round>', or the corrected result's id "
                                   "(a correction settles the bet again after it).")
    reversed_at: AwareDatetime


BetEnding = Annotated[BetSettled | SettlementReversed, Field(discriminator="type")]


WalletEnding = Annotated[BetSettled | SettlementReversed | BetRejected,
                         Field(discriminator="type")]


class EndingsPack(FrozenModel):
    """One record of `wallet.endings`: the endings of bets (settlements, reversals,
    rejections: the very records bets.settled and bets.decisions carry) of players on one
    partition, in the order bet-settlement published them. bet-settlement's outbox packs
    an entry's endings by the wallet's partition (`services.infra.packs`), so a round's
    thousand settlements reach the wallet in a few records instead of a thousand."""


    type: Literal["pack"] = "pack"
    sizes: tuple[int, ...] = Field(description="The size of each record in bytes, as "
                                               "written (`services.infra.packs.unpack`).")
    records: tuple[WalletEnding, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _a_size_each(self) -> EndingsPack:
        if len(self.sizes) != len(self.records):
            raise ValueError(f"a pack of {len(self.records)} records with "
                             f"{len(self.sizes)} sizes")
        return self
