"""Builds one correctly recorded round (table events, result, decisions, settlements, wallet),
as the services would write it, so tests can tamper with a copy."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from shared.cards import parse_cards
from shared.events.bet_events import (
    BetAccepted,
    BetSettled,
    RoundManifest,
    SettlementReversed,
    annul_refund_id,
    manifest_digest,
    reversal_id,
    settlement_id,
)
from shared.events.canonical import GENESIS_HASH
from shared.events.operator_wallet import (
    OperatorAnswer,
    OperatorCallRecord,
    WalletRequest,
    transaction_id_of,
)
from shared.events.results import RoundResultPublished, result_id
from shared.events.table import (
    BettingClosed,
    CardDealt,
    RoundAnnulled,
    RoundCompleted,
    RoundCorrected,
    RoundOpened,
    ShoeStarted,
    TableEventBase,
    seal,
)
from shared.events.wallet_events import WalletTransaction, tx_id
from shared.profile import load_profile, pinned, shipped_digest
from shared.rounds import evaluate_round
from shared.settlement import Bet, settle
from shared.topics import (
    BETS_DECISIONS_TOPIC,
    BETS_SETTLED_TOPIC,
    ROUND_RESULTS_TOPIC,
    TABLE_CORRECTIONS_TOPIC,
    TABLE_EVENTS_TOPIC,
    WALLET_OPERATOR_CALLS_TOPIC,
    WALLET_TRANSACTIONS_TOPIC,
)
from tests.event_keys import events_key

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


@dataclass
class RecordedRound:
    table_id: str = "T1"
    round_id: str = "R1"
    profile: str = "sbo-baccarat"
    # the profile version the round is played under (None: the current one); pin=False records
    # no version, as rounds logged before profiles had versions
    profile_version: int | None = None
    pin: bool = True
    # as dealer-event writes a round since the index of corrections: its round_completed says
    # `corrections_indexed` and each correction is on table.corrections too; False records it
    # as before the index (no flag, the corrections on table.events alone)
    indexed: bool = True
    cards: str = "AS,3H,2D,3C,9S"
    t0: datetime = T0
    bets: tuple[tuple[str, str, str, int], ...] = (
        ("b1", "alice", "banker", 1_000), ("b2", "alice", "player", 500),
        ("b3", "bob", "fortune_six", 100))
    events: list[TableEventBase] = field(default_factory=list)
    result: RoundResultPublished | None = None
    decisions: list = field(default_factory=list)
    settlements: list[BetSettled] = field(default_factory=list)
    wallet: list[WalletTransaction] = field(default_factory=list)
    corrections: list[RoundCorrected] = field(default_factory=list)
    corrected_results: list[RoundResultPublished] = field(default_factory=list)
    operator_calls: list[OperatorCallRecord] = field(default_factory=list)
    dealer: str = "Ana"

    def __post_init__(self) -> None:
        version = self.profile_version or pinned(self.profile)[0]
        profile = load_profile(self.profile, version)
        pins = {"profile_version": version, "profile_digest": shipped_digest(self.profile, version)
                } if self.pin else {}
        cards = parse_cards(self.cards)
        self._add(ShoeStarted, shoe_id="S1", profile=self.profile, decks=profile.decks)
        self._add(RoundOpened, shoe_id="S1", round_id=self.round_id, round_number=1,
                  dealer=self.dealer, profile=self.profile, betting_closes_at=self.t0 + timedelta(seconds=30),
                  **pins)
        balances = {p: 100_000 for p in self.players}
        for bet_id, player, bet, stake in self.bets:
            balances[player] -= stake
            self.wallet.append(self._tx(player, "stake_debit", stake, bet_id, balances[player]))
            self.decisions.append(BetAccepted(
                bet_id=bet_id, player_id=player, table_id=self.table_id, round_id=self.round_id,
                bet=bet, stake=stake, currency="IDR", decided_at=self.t0))
        self._add(BettingClosed, round_id=self.round_id, reason="timer")
        accepted = [d for d in self.decisions]
        self.decisions.append(RoundManifest(
            table_id=self.table_id, round_id=self.round_id, bet_count=len(accepted),
            total_stake=sum(d.stake for d in accepted),
            digest=manifest_digest(d.bet_id for d in accepted), closed_at=self.t0))
        for i, card in enumerate(cards):
            self._add(CardDealt, round_id=self.round_id, card=card, shoe_position=i,
                      round_position=i)
        completed = self._add(RoundCompleted, round_id=self.round_id, cards=tuple(cards),
                              **({"corrections_indexed": True} if self.indexed else {}))
        outcome = evaluate_round(profile, cards)
        self.result = RoundResultPublished(
            result_id=result_id(self.table_id, self.round_id), table_id=self.table_id,
            round_id=self.round_id, shoe_id="S1", profile=self.profile, dealer=self.dealer,
            cards=tuple(cards), completed_seq=completed.seq, completed_hash=completed.hash,
            occurred_at=self.t0, result=outcome, **pins)
        for d in accepted:
            s = settle(Bet(bet=d.bet, stake=d.stake), outcome, profile)
            self.settlements.append(BetSettled(
                **d.model_dump(exclude={"type", "decided_at"}), settlement_id=settlement_id(d.bet_id),
                outcome=s.outcome, returned=s.returned, cause=self.result.result_id, settled_at=self.t0))
            if s.returned:
                balances[d.player_id] += s.returned
                self.wallet.append(self._tx(d.player_id, "payout", s.returned,
                                            settlement_id(d.bet_id), balances[d.player_id]))

    def correct(self, cards: str, supervisor: str = "Sari", after: timedelta | None = None,
                reason_text: str = "the video shows another card") -> RoundCorrected:
        """A supervisor corrects the settled round's cards (`after` its last event, default
        1 s), as the services write it (seed 004 §5): dealer-event's `round_corrected`,
        game-evaluation's corrected result (its own function), and for each bet whose
        settlement the new cards change a reversal of the standing settlement and a settlement
        again, the wallet taking the one back and paying the other."""
        from services.game_evaluation.evaluator import corrected_result

        last = self.events[-1].occurred_at
        if not hasattr(self, "_completed_at"):  # the original result's time stays the round's
            self._completed_at = last
        previous = self.corrections[-1] if self.corrections else None
        replaced = previous.cards if previous else self.result.cards
        version = self.profile_version or pinned(self.profile)[0]
        pins = {"profile_version": version, "profile_digest": shipped_digest(self.profile, version)
                } if self.pin else {}
        event = self._add(RoundCorrected, round_id=self.round_id, shoe_id="S1",
                          profile=self.profile, dealer=self.dealer, cards=tuple(parse_cards(cards)),
                          replaced_cards=tuple(replaced), correction=len(self.corrections) + 1,
                          reason_code="mis_scan", reason_text=reason_text,
                          supervisor=supervisor, at=last + (after or timedelta(seconds=1)),
                          **pins)
        self.corrections.append(event)
        result = corrected_result(event)
        self.corrected_results.append(result)
        profile = load_profile(self.profile, version)
        balances = {tx.player_id: tx.balance_after for tx in self.wallet}
        standing = {s.bet_id: s for s in self.settlements if isinstance(s, BetSettled)}
        for bet_id, original in standing.items():
            s = settle(Bet(bet=original.bet, stake=original.stake), result.result, profile)
            if (s.outcome, s.returned) == (original.outcome, original.returned):
                continue
            facts, reversal = self._reverse(original, event, balances, "mis_scan", reason_text,
                                            supervisor, result.result_id)
            again = BetSettled(**facts, settlement_id=settlement_id(bet_id, event.correction),
                               outcome=s.outcome, returned=s.returned, cause=result.result_id,
                               settled_at=event.occurred_at)
            self.settlements += [reversal, again]
            player = original.player_id
            if again.returned:
                balances[player] += again.returned
                self.wallet.append(self._tx(player, "payout", again.returned,
                                            again.settlement_id, balances[player],
                                            event.occurred_at))
        return event

    def annul(self, supervisor: str = "Sari", after: timedelta | None = None,
              refund_key: str = "bet") -> RoundAnnulled:
        """A supervisor annuls the settled round (`after` the round's last event, default 1 s):
        each settlement reversed (its return taken back by the wallet), then the stake refunded,
        as bet-settlement and the wallet write it (the wallet keys the refund's credit by the
        bet id, `bet_refund:<bet>`; refund_key="settlement" keys it `bet_refund:annul-refund:<bet>`)."""
        self._completed_at = self.events[-1].occurred_at
        event = self._add(RoundAnnulled, round_id=self.round_id, reason_code="card_exposed",
                          reason_text="a card was exposed during the deal", supervisor=supervisor,
                          at=self.events[-1].occurred_at + after if after else None)
        balances = {tx.player_id: tx.balance_after for tx in self.wallet}
        for original in list(self.settlements):
            facts, reversal = self._reverse(original, event, balances, event.reason_code,
                                            event.reason_text, supervisor,
                                            f"annul:{self.table_id}:{self.round_id}")
            refund = BetSettled(**facts, settlement_id=annul_refund_id(original.bet_id),
                                outcome="void_refund", returned=original.stake,
                                cause=reversal.cause, settled_at=event.occurred_at)
            self.settlements += [reversal, refund]
            player = original.player_id
            balances[player] += refund.returned
            self.wallet.append(self._tx(player, "bet_refund", refund.returned,
                                        refund.bet_id if refund_key == "bet" else refund.settlement_id,
                                        balances[player], event.occurred_at))
        return event

    def _reverse(self, original: BetSettled, event: TableEventBase, balances: dict[str, int],
                 reason_code: str, reason_text: str, supervisor: str, cause: str
                 ) -> tuple[dict, SettlementReversed]:
        """(the bet's facts, the reversal of `original`), the wallet taking its return back."""
        facts = original.model_dump(include={"bet_id", "player_id", "table_id", "round_id",
                                             "bet", "position", "stake", "currency"})
        reversal = SettlementReversed(
            **facts, reversal_id=reversal_id(original.settlement_id),
            settlement_id=original.settlement_id, original_outcome=original.outcome,
            amount=original.returned, reason_code=reason_code, reason_text=reason_text,
            supervisor=supervisor, cause=cause, reversed_at=event.occurred_at)
        if reversal.amount:
            balances[original.player_id] -= reversal.amount
            self.wallet.append(self._tx(original.player_id, "payout_reversal", reversal.amount,
                                        reversal.reversal_id, balances[original.player_id],
                                        event.occurred_at))
        return facts, reversal

    def seamless(self, zero_credits: bool = True, latency: timedelta = timedelta(milliseconds=40)
                 ) -> list[OperatorCallRecord]:
        """The round's calls to the operator's wallet as the seamless wallet makes them
        (services.wallet.seamless), each answered ok `latency` later with the
        player's balance at the operator: a debit per bet, a credit per settlement (none of 0
        with `zero_credits=False`), the rollback of the credit each reversal takes back, and
        the rollback of the debit for a rejected or refunded bet. Call it once the round's
        corrections and annulment are made."""
        balances = {p: 100_000 for p in self.players}
        credits: dict[str, WalletRequest] = {}
        self.operator_calls = []

        def call(kind, cause, d, amount, at, reference=None):
            request = WalletRequest(
                transaction_id=transaction_id_of(kind, cause), kind=kind, player_id=d.player_id,
                amount=amount, currency=d.currency, table_id=self.table_id,
                round_id=self.round_id, bet_id=d.bet_id, reference_transaction_id=reference,
                round_closed=kind == "credit", requested_at=at,
                session_token="s-" + d.player_id if kind == "debit" else None)
            balances[d.player_id] += -amount if kind == "debit" or (
                kind == "rollback" and reference.startswith("credit:")) else amount
            self.operator_calls.append(OperatorCallRecord(request=request, answer=OperatorAnswer(
                outcome="ok", http_status=200, balance=balances[d.player_id],
                operator_transaction_id=f"op-{len(self.operator_calls) + 1}",
                answered_at=at + latency)))
            return request

        for d in self.decisions:
            if d.type in ("bet_accepted", "bet_rejected"):
                call("debit", d.bet_id, d, d.stake, d.decided_at)
            if d.type == "bet_rejected":
                call("rollback", f"debit:{d.bet_id}", d, d.stake, d.decided_at, f"debit:{d.bet_id}")
        for s in self.settlements:
            at = s.reversed_at if isinstance(s, SettlementReversed) else s.settled_at
            if isinstance(s, SettlementReversed):
                credit = credits.get(s.settlement_id)
                if credit is not None:
                    call("rollback", credit.transaction_id, s, credit.amount, at,
                         credit.transaction_id)
            elif s.outcome == "void_refund":
                call("rollback", f"debit:{s.bet_id}", s, s.returned, at, f"debit:{s.bet_id}")
            elif s.returned or zero_credits:
                credits[s.settlement_id] = call("credit", s.settlement_id, s, s.returned, at,
                                                f"debit:{s.bet_id}")
        return self.operator_calls

    @property
    def players(self) -> list[str]:
        return sorted({player for _, player, _, _ in self.bets})

    def records(self) -> list[tuple[str, str, bytes, datetime]]:
        """(topic, key, value, timestamp) of every record, as the services would produce them."""
        out = [(TABLE_EVENTS_TOPIC, self.table_id, e.model_dump_json().encode(), e.occurred_at)
               for e in self.events]
        if self.indexed:
            out += [(TABLE_CORRECTIONS_TOPIC, self.table_id, e.model_dump_json().encode(),
                     e.occurred_at) for e in self.events if isinstance(e, RoundCorrected)]
        done = getattr(self, "_completed_at", None) or self.events[-1].occurred_at
        out.append((ROUND_RESULTS_TOPIC, self.table_id, self.result.model_dump_json().encode(), done))
        out += [(ROUND_RESULTS_TOPIC, self.table_id, r.model_dump_json().encode(), r.occurred_at)
                for r in self.corrected_results]
        out += [(BETS_DECISIONS_TOPIC, self.table_id, d.model_dump_json().encode(), self.t0)
                for d in self.decisions]
        out += [(BETS_SETTLED_TOPIC, self.table_id, s.model_dump_json().encode(),
                 s.reversed_at if s.type == "settlement_reversed" else
                 s.settled_at if s.settlement_id.startswith("annul-refund:")
                 or s.cause != self.result.result_id else done)
                for s in self.settlements]
        out += [(WALLET_TRANSACTIONS_TOPIC, tx.player_id, tx.model_dump_json().encode(),
                 tx.occurred_at) for tx in self.wallet]
        out += [(WALLET_OPERATOR_CALLS_TOPIC, c.request.player_id, c.model_dump_json().encode(),
                 c.answer.answered_at) for c in self.operator_calls]
        return out

    def _add(self, kind, at: datetime | None = None, **fields) -> TableEventBase:
        prev = self.events[-1].hash if self.events else GENESIS_HASH
        event = seal(kind, table_id=self.table_id, seq=len(self.events) + 1, prev_hash=prev,
                     occurred_at=at or self.t0 + timedelta(seconds=len(self.events)),
                     key=events_key(), **fields)
        self.events.append(event)
        return event

    def _tx(self, player, kind, amount, cause, balance, at: datetime | None = None
            ) -> WalletTransaction:
        return WalletTransaction(tx_id=tx_id(kind, cause), player_id=player, kind=kind,
                                 amount=amount, balance_after=balance, currency="IDR",
                                 cause_id=cause, table_id=self.table_id, round_id=self.round_id,
                                 occurred_at=at or self.t0)
