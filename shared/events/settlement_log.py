"""`settlement.log`: bet-settlement's source of truth, the entries of the records it applied.

One input record (a bet, a table event, a result) writes one or more `SettlementEntry`s:
absolute values of everything it changed (the rounds' headers after it, the bet entries
it changed, the spot totals, the table's chain watch and its list of rounds still waiting
to open) and the records it publishes, by reference to the bet entries it carries where it
can (`OutRef`), else in full. A round's result settling thousands of bets is split over
several entries of about `ENTRY_BYTES` each (at most `BETS_PER_ENTRY` bet entries); the headers, the watch and
the pending list ride in the record's last entry (`source.last`), and the fold applies a
record's entries together, once its last one is in the log
(`services.infra.own_log`): a record cut short by a crash changed nothing and is
decided again.

Chained per partition like every own log (`prev`: the previous valid entry's id);
partition p of the log pairs with partition p of bets.placed, table.events and
round.results, which are co-partitioned by table id.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from shared.events.bet_events import (
    EMPTY_DIGEST,
    BetAccepted,
    BetPlaced,
    BetRejected,
    BetSettled,
    RoundManifest,
    SettlementReversed,
)
from shared.events.sources import ChainedEntry
from shared.models import FrozenModel
from shared.round_phase import SettlementStatus

# A record's changes are cut into entries of about ENTRY_BYTES of bet entries, spot totals
# and what they publish (docs/decisions/scale.md: no record above 64 KB; Kafka's limit is
# 1 MB), and never more than these counts
ENTRY_BYTES = 48_000
BETS_PER_ENTRY = 200
SPOTS_PER_ENTRY = 1000

# bet-settlement's own words for its work on a round, on the wire since the first entry: not
# the round's phase (shared.round_phase.phases_of maps them; docs/decisions/round-phase.md)
Status = SettlementStatus
Decision = Annotated[BetAccepted | BetRejected, Field(discriminator="type")]


class RoundHeader(BaseModel):
    """What every record of the round needs; bounded whatever the number of bets."""

    model_config = ConfigDict(frozen=True)

    table_id: str
    round_id: str
    status: Status = "pending"
    profile: str | None = None
    profile_version: int | None = None  # pinned by RoundOpened: the round's rules
    received: int = 0  # distinct bet ids stored (the ordinal index runs 1..received)
    accepted: int = 0
    total_stake: int = 0  # of the accepted bets, minor units
    digest: str = EMPTY_DIGEST  # manifest digest of the accepted bet ids, kept incrementally
    manifest: RoundManifest | None = None
    cause: str | None = None  # the result id or "void:<table>:<round>" that settled it
    closes_at: datetime | None = None  # the announced close (RoundOpened.betting_closes_at)
    closed_at: datetime | None = None  # the close's time (BettingClosed.occurred_at)
    deferred: int = 0  # bets placed at/after closes_at, waiting undecided for the close
    # wallet-commands partitions whose intake marks were read (bounded by the count)
    covered: tuple[int, ...] = ()
    partition_count: int | None = None
    annulled_by: str | None = None  # the RoundAnnulled's event id
    latest_accepted: datetime | None = None  # the latest placed_at among the accepted
    # a pending round: the seq of its RoundOpened, as its bets say the wallet saw it (the
    # round never opened here once the table's chain passed it); None: no bet said
    opened_seq: int | None = None
    # an ended round's id opened again on the chain at this seq (a device reused it, more
    # than the table's kept rounds later): what follows it there is the new round's, and
    # never moves this round's money (docs/decisions/tables.md, "A reused round id")
    reused_at: int | None = None


class SpotTotal(BaseModel):
    """A player's accepted stake on one spot (bet id, position) of the round."""

    model_config = ConfigDict(frozen=True)

    total: int


class BetEntry(BaseModel):
    """One bet of the round: what was placed, what was decided, how it was settled."""

    model_config = ConfigDict(frozen=True)

    ordinal: int = Field(description="Its place in the round's ordinal index (1..received).")
    bet: BetPlaced
    decision: Decision | None = None
    settlement: BetSettled | None = None
    # a management void after completion: the reversal of `settlement`, then the refund
    reversal: SettlementReversed | None = None
    refund: BetSettled | None = None


class SpotWrite(FrozenModel):

    key: str
    total: int


class ChainWatch(FrozenModel):
    """The table's chain head (`event_auth.TableWatch`) and its flag."""


    table_id: str
    seq: int | None = None
    hash: str | None = None
    flagged: str | None = None
    # the hashes of the latest void events (event_auth.ChainHead.void_tips): absent in
    # older entries and left out when empty
    void_tips: tuple[str, ...] = Field(default=(), exclude_if=lambda tips: not tips)


class PendingRounds(FrozenModel):
    """The table's rounds with bets read before their RoundOpened, after the record."""


    table_id: str
    rounds: tuple[str, ...] = ()


BetField = Literal["decision", "settlement", "reversal", "refund"]


class OutRef(FrozenModel):
    """A record the entry publishes that one of its own bet entries holds."""


    type: Literal["ref"] = "ref"
    round_id: str
    bet_id: str
    field: BetField


Published = Annotated[OutRef | BetAccepted | BetRejected | RoundManifest | BetSettled
                      | SettlementReversed, Field(discriminator="type")]


class SettlementEntry(ChainedEntry):
    """Part of what one input record changed, absolute values only (folding an entry again,
    or over a newer state of the same keys, is harmless)."""

    schema_version: Literal[1] = 1
    type: Literal["settlement_entry"] = "settlement_entry"
    table_id: str = Field(description="The record's table: the entry's key.")
    headers: list[RoundHeader] = Field(default_factory=list,
                                       description="Rounds' headers after the record (its "
                                                   "last entry only).")
    bets: list[BetEntry] = Field(default_factory=list, max_length=BETS_PER_ENTRY,
                                 description="Bet entries after the record (their ordinal "
                                             "index follows from each one's ordinal).")
    spots: list[SpotWrite] = Field(default_factory=list, max_length=SPOTS_PER_ENTRY)
    watch: ChainWatch | None = Field(default=None, description="The table's chain watch "
                                                               "after, if it changed.")
    pending: PendingRounds | None = Field(default=None, description="The table's waiting "
                                                                    "rounds, if changed.")
    publish: list[Published] = Field(default_factory=list,
                                     description="What the entry publishes, in order.")
