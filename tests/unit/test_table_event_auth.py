"""Issue 11 finding 3 / deliverable 4: table events carry dealer-event's HMAC; every consumer
verifies it and the chain's continuity before acting, refuses (dead-letters) a forged,
altered, unsigned or out-of-order event and flags the table; replay and the operator's
rebuild leave a forged event out. dealer-event signs what it publishes and no longer reads
table.events at all (its state is the fold of its own log, dealer.log): that nothing on
table.events, forged or not, moves it is test_hostile_rebuild's."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from services.bet_settlement.settlement_fold import Lookups
from services.dealer_event.decisions import machine_config
from services.game_evaluation.evaluator import (
    EvaluationState,
    flagged_view,
    observe_verified,
)
from services.infra.clock import SystemClock
from services.infra.settings import Settings
from services.operator.replay import replay_round
from services.wallet.rounds_view import BetRefused, check_round_takes_bet, fold_verified
from shared.cards import parse_card
from shared.events.canonical import GENESIS_HASH
from shared.events.dead_letters import DeadLetter
from shared.events.event_auth import (
    ChainHead,
    TableEventRefused,
    TableFlagged,
    TableWatch,
    advance,
    auth_problem,
    chain_problem,
    verify_next,
)
from shared.events.inputs import NewShoe, OpenRound
from shared.events.results import RoundResultPublished, result_id
from shared.events.table import (
    BettingClosed,
    CardDealt,
    RoundOpened,
    ShoeStarted,
    TableClosed,
    TableReopened,
    event_auth,
    parse_table_event,
    seal,
)
from shared.profile import load_profile
from shared.rounds import evaluate_round
from shared.topics import (
    BETS_SETTLED_TOPIC,
    DEAD_LETTERS_TOPIC,
    ROUND_RESULTS_TOPIC,
    TABLE_EVENTS_TOPIC,
)
from tests.round_builder import RecordedRound
from tests.unit.agent_loop_support import Event
from tests.unit.dealer_support import World
from tests.unit.settlement_log_support import LogBroker, Worker, patch_kernel, rebuilt

KEY = b"test-table-events-key"
OTHER = b"someone-elses-key"
T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
# sbo-baccarat: player 8H KC (natural 8), banker KD then 2S (2): player wins on 4 cards;
# the forged 9D as the banker's second card makes a banker natural 9 instead
REAL, FORGED = "2S", "9D"


class Chain:
    """A table's events as dealer-event writes them (signed with KEY)."""

    def __init__(self, table_id: str = "T1", key: bytes | None = KEY) -> None:
        self.table_id, self.key = table_id, key
        self.events = []

    @property
    def head(self):
        return self.events[-1] if self.events else None

    def draft(self, kind, key: bytes | None = None, **fields):
        """The next event, not appended (signed with `key`)."""
        head = self.head
        return seal(kind, table_id=self.table_id, seq=head.seq + 1 if head else 1,
                    prev_hash=head.hash if head else GENESIS_HASH, occurred_at=T0, key=key,
                    **fields)

    def add(self, kind, **fields):
        event = self.draft(kind, key=self.key, **fields)
        self.events.append(event)
        return event

    def card(self, card: str, position: int, key: bytes | None = None, append: bool = True):
        fields = dict(round_id="R1", card=parse_card(card), shoe_position=position,
                      round_position=position)
        return self.add(CardDealt, **fields) if append else \
            self.draft(CardDealt, key=key, **fields)


def opened_round(chain: Chain | None = None) -> Chain:
    chain = chain or Chain()
    chain.add(ShoeStarted, shoe_id="S1", profile="sbo-baccarat", decks=8)
    chain.add(RoundOpened, shoe_id="S1", round_id="R1", round_number=1, dealer="Ana",
              profile="sbo-baccarat", betting_closes_at=T0 + timedelta(seconds=30))
    chain.add(BettingClosed, round_id="R1", reason="timer")
    for i, card in enumerate(["8H", "KD", "KC"]):
        chain.card(card, i)
    return chain


# --- the pure checks -------------------------------------------------------------------------

def test_the_auth_is_outside_the_hash_and_survives_the_wire():
    signed = seal(ShoeStarted, table_id="T1", seq=1, prev_hash=GENESIS_HASH, occurred_at=T0,
                  key=KEY, shoe_id="S1", profile="sbo-baccarat", decks=8)
    unsigned = seal(ShoeStarted, table_id="T1", seq=1, prev_hash=GENESIS_HASH, occurred_at=T0,
                    shoe_id="S1", profile="sbo-baccarat", decks=8)
    assert signed.hash == unsigned.hash == signed.computed_hash()
    assert signed.auth == event_auth(KEY, signed.hash) and unsigned.auth is None
    assert "auth" not in unsigned.model_dump_json()  # older records' bytes are unchanged
    again = parse_table_event(signed.model_dump_json())
    assert again == signed and auth_problem(again, KEY) is None


def test_forged_altered_and_unsigned_events_are_named():
    chain = opened_round()
    real = chain.card(REAL, 3)
    forged_unsigned = chain.card(FORGED, 3, append=False)
    forged_other_key = chain.card(FORGED, 3, key=OTHER, append=False)
    altered = real.model_copy(update={"card": parse_card(FORGED)})
    assert auth_problem(real, KEY) is None
    assert "unsigned" in auth_problem(forged_unsigned, KEY)
    assert "forged" in auth_problem(forged_other_key, KEY)
    assert "altered" in auth_problem(altered, KEY)
    # recomputing the hash of an altered event does not help without the key
    rehashed = altered.model_copy(update={"hash": altered.computed_hash()})
    assert "forged" in auth_problem(rehashed, KEY)
    # legacy unsigned events only when told to accept them; a wrong auth never
    assert auth_problem(forged_unsigned, KEY, accept_unsigned=True) is None
    assert "forged" in auth_problem(forged_other_key, KEY, accept_unsigned=True)


def test_the_chain_must_continue_seq_and_prev_hash():
    chain = opened_round()
    head = ChainHead(chain.head.seq, chain.head.hash)
    nxt = chain.card(REAL, 3, key=KEY, append=False)
    assert chain_problem(nxt, head) is None and chain_problem(nxt, None) is None
    assert verify_next(nxt, head, KEY) == "apply"
    gap = nxt.model_copy(update={"seq": nxt.seq + 1})
    gap = gap.model_copy(update={"hash": gap.computed_hash()})
    gap = gap.model_copy(update={"auth": event_auth(KEY, gap.hash)})
    # signed and authentic, past the next seq on no void event: a gap, refused
    with pytest.raises(TableEventRefused, match="out of order"):
        verify_next(gap, head, KEY)
    fork = seal(CardDealt, table_id="T1", seq=nxt.seq, prev_hash="1" * 64, occurred_at=T0,
                key=KEY, round_id="R1", card=parse_card(REAL), shoe_position=3, round_position=3)
    # signed and authentic, a fork at the head: a lost race (void), never refused
    assert verify_next(fork, head, KEY) == "void"
    rival_head = seal(CardDealt, table_id="T1", seq=head.seq, prev_hash="2" * 64,
                      occurred_at=T0, key=KEY, round_id="R1", card=parse_card(REAL),
                      shoe_position=2, round_position=2)
    assert verify_next(rival_head, head, KEY) == "void", "same seq as the head, other hash"
    # unsigned (legacy, accepted): nothing proves its writer, so off the chain is a break
    unsigned_gap = gap.model_copy(update={"auth": None})
    with pytest.raises(TableEventRefused, match="out of order"):
        verify_next(unsigned_gap, head, KEY, accept_unsigned=True)
    unsigned_fork = fork.model_copy(update={"auth": None})
    with pytest.raises(TableEventRefused, match="prev_hash"):
        verify_next(unsigned_fork, head, KEY, accept_unsigned=True)
    # an authentic event already seen is a redelivery, never a refusal
    assert verify_next(chain.events[2], head, KEY) == "seen"
    # a forged one is refused even at an old seq
    old_seq = seal(CardDealt, table_id="T1", seq=2, prev_hash=chain.events[0].hash,
                   occurred_at=T0, round_id="R1", card=parse_card(FORGED), shoe_position=0,
                   round_position=0)
    with pytest.raises(TableEventRefused, match="unsigned"):
        verify_next(old_seq, head, KEY)


def test_a_flagged_table_is_followed_and_cleared_only_by_an_authentic_reopening():
    chain = opened_round()
    watch = TableWatch()
    for event in chain.events:
        watch, verdict = advance(watch, event, KEY)
        assert verdict == "apply"
    forged = chain.card(FORGED, 3, append=False)
    with pytest.raises(TableFlagged) as flagged:
        advance(watch, forged, KEY)
    watch = flagged.value.watch
    assert watch.flagged and "unsigned" in watch.flagged
    assert watch.head.seq == chain.head.seq  # the forgery moved nothing
    watch, verdict = advance(watch, chain.card(REAL, 3), KEY)
    assert verdict == "apply" and watch.flagged and watch.head.seq == chain.head.seq
    chain.add(TableClosed, reason_code="other", reason_text="forged event", supervisor="Sam")
    watch, _ = advance(watch, chain.head, KEY)
    assert watch.flagged
    chain.add(TableReopened, reason_text="reviewed", supervisor="Sam")
    watch, _ = advance(watch, chain.head, KEY)
    assert watch.flagged is None
    assert TableWatch.from_json(watch.to_json()) == watch


# --- game-evaluation --------------------------------------------------------------------------

def _evaluate(events, view=None):
    view = view or EvaluationState(table_id="T1")
    results = []
    for event in events:
        seen = observe_verified(view, event, KEY)
        view = seen.view
        if seen.result is not None:
            results.append(seen.result)
    return view, results


def test_game_evaluation_publishes_the_result_of_authentic_cards():
    chain = opened_round()
    chain.card(REAL, 3)
    _, results = _evaluate(chain.events)
    assert [r.result.winner for r in results] == ["player"]


def test_game_evaluation_refuses_a_forged_card_and_flags_the_table():
    """Finding 3: a forged 7C (here 9D) with a valid hash chain but no valid HMAC, written
    before the real card, used to be evaluated; now it is refused and nothing is published
    for the table until a supervisor reopens it."""
    chain = opened_round()
    view, _ = _evaluate(chain.events)
    for forged in (chain.card(FORGED, 3, append=False),
                   chain.card(FORGED, 3, key=OTHER, append=False)):
        with pytest.raises(TableFlagged) as refused:
            observe_verified(view, forged, KEY)
        watch = refused.value.watch
        assert watch.flagged and watch.head is not None and watch.head.seq == view.last_seq
    flagged = flagged_view(view, refused.value)
    assert flagged.flagged and flagged.last_seq == view.last_seq
    # the real card continues the chain, but the flagged table gets no result
    seen = observe_verified(flagged, chain.card(REAL, 3), KEY)
    assert seen.result is None and seen.view.flagged
    assert any("flagged" in p for p in seen.problems)


def test_game_evaluation_refuses_an_authentic_gap_and_an_altered_event():
    chain = opened_round()
    view, _ = _evaluate(chain.events[:4])
    with pytest.raises(TableFlagged, match="out of order"):  # seq 5 missing: a gap
        observe_verified(view, chain.events[5], KEY)
    fork = chain.events[4].model_copy(update={"prev_hash": "1" * 64})
    fork = fork.model_copy(update={"hash": fork.computed_hash()})
    fork = fork.model_copy(update={"auth": event_auth(KEY, fork.hash)})
    seen = observe_verified(view, fork, KEY)  # a fork at the head: a lost race
    assert seen.void and seen.view.void_tips == (fork.hash,) and seen.result is None
    assert seen.view.model_copy(update={"void_tips": ()}) == view, "void: the head stays"
    unsigned = opened_round(Chain(key=None))
    unsigned_view = EvaluationState(table_id="T1")
    for event in unsigned.events[:4]:
        unsigned_view = observe_verified(unsigned_view, event, KEY, accept_unsigned=True).view
    with pytest.raises(TableFlagged, match="out of order"):  # unsigned: a break
        observe_verified(unsigned_view, unsigned.events[5], KEY, accept_unsigned=True)
    altered = chain.events[4].model_copy(update={"card": parse_card("AS")})
    with pytest.raises(TableFlagged, match="altered"):
        observe_verified(view, altered, KEY)


# --- bet-settlement ---------------------------------------------------------------------------

@pytest.fixture
def worker(monkeypatch) -> Worker:
    broker = LogBroker()
    patch_kernel(monkeypatch, broker)
    return Worker(broker, SystemClock(), key=KEY, accept_unsigned=False)


def _result(chain: Chain, cards: list[str]) -> RoundResultPublished:
    profile = load_profile("sbo-baccarat")
    parsed = [parse_card(c) for c in cards]
    return RoundResultPublished(
        result_id=result_id("T1", "R1"), table_id="T1", round_id="R1", shoe_id="S1",
        profile="sbo-baccarat", dealer="Ana", cards=tuple(parsed),
        completed_seq=chain.head.seq, completed_hash=chain.head.hash, occurred_at=T0,
        result=evaluate_round(profile, parsed))


def _send(worker: Worker, topic: str, record) -> list[DeadLetter]:
    """Apply one record; the dead letters it left."""
    offsets = worker.__dict__.setdefault("offsets", {})
    offsets[topic] = offset = offsets.get(topic, -1) + 1
    worker.broker.steps.clear()
    worker.apply([Event(topic, offset, b"T1", record.model_dump_json().encode())])
    return [DeadLetter.model_validate_json(v) for t, _, v in worker.broker.published
            if t == DEAD_LETTERS_TOPIC]


def test_bet_settlement_refuses_a_forged_event_flags_the_table_and_settles_nothing(worker):
    chain = opened_round()
    for event in chain.events:
        assert _send(worker, TABLE_EVENTS_TOPIC, event) == []
    forged = chain.card(FORGED, 3, append=False)
    (letter,) = _send(worker, TABLE_EVENTS_TOPIC, forged)
    assert (letter.error_type, letter.topic) == ("TableEventRefused", TABLE_EVENTS_TOPIC)
    assert "unsigned" in letter.error
    assert Lookups(worker.kv()).watch("T1").flagged  # in the log: a restart keeps the flag
    assert Lookups(rebuilt(worker.broker)).watch("T1").flagged
    assert _send(worker, TABLE_EVENTS_TOPIC, chain.card(REAL, 3)) == []
    result = _result(chain, ["8H", "KD", "KC", FORGED])
    (letter,) = _send(worker, ROUND_RESULTS_TOPIC, result)
    assert letter.error_type == "TableIsFlagged"
    assert not [t for t, _, _ in worker.broker.published if t == BETS_SETTLED_TOPIC]


def test_bet_settlement_flags_an_authentic_gap(worker):
    chain = opened_round()
    for event in chain.events[:3]:
        assert _send(worker, TABLE_EVENTS_TOPIC, event) == []
    assert len(_send(worker, TABLE_EVENTS_TOPIC, chain.events[4])) == 1, "seq 4 missing: flagged"
    watch = Lookups(worker.kv()).watch("T1")
    assert watch.flagged and "out of order" in watch.flagged and watch.head.seq == 3


# --- the wallet's view ------------------------------------------------------------------------

def test_the_wallet_view_skips_a_forged_event_and_takes_no_bet_on_the_flagged_table():
    chain = Chain()
    chain.add(ShoeStarted, shoe_id="S1", profile="sbo-baccarat", decks=8)
    view = None
    for event in chain.events:
        view, refused = fold_verified(view, event, KEY)
        assert refused is None
    forged_open = chain.draft(RoundOpened, shoe_id="S1", round_id="R1", round_number=1,
                              dealer="Ana", profile="sbo-baccarat",
                              betting_closes_at=datetime.now(UTC) + timedelta(seconds=60))
    view, refused = fold_verified(view, forged_open, KEY)
    assert refused is not None and view.flagged and "R1" not in view.rounds
    chain.add(RoundOpened, shoe_id="S1", round_id="R1", round_number=1, dealer="Ana",
              profile="sbo-baccarat", betting_closes_at=datetime.now(UTC) + timedelta(seconds=60))
    view, refused = fold_verified(view, chain.head, KEY)
    assert refused is None and view.rounds["R1"].phase == "betting"
    with pytest.raises(BetRefused) as no:
        check_round_takes_bet(view, table_id="T1", round_id="R1", bet="player", position=None,
                  stake=10_000, currency="IDR", now=datetime.now(UTC))
    assert (no.value.status, no.value.code) == (409, "table_flagged")
    chain.add(TableClosed, reason_code="other", reason_text="forged event", supervisor="Sam")
    chain.add(TableReopened, reason_text="reviewed", supervisor="Sam")
    for event in chain.events[-2:]:
        view, _ = fold_verified(view, event, KEY)
    assert view.flagged is None


def test_the_wallet_doors_refusal_binds_a_new_bet_only():
    """The door's verdict travels with the command (`door_refusal`): a bet on the flagged
    table is refused with the door's status and code and moves nothing, while a bet placed
    before the table was flagged, resent now, gets its first answer."""
    from services.wallet import handlers
    from services.wallet.commands import CreateAccount, Deposit, DoorRefusal
    from tests.unit.wallet_support import Ledger, bet

    chain = Chain()
    chain.add(ShoeStarted, shoe_id="S1", profile="sbo-baccarat", decks=8)
    view = None
    for event in chain.events:
        view, _ = fold_verified(view, event, KEY)
    # an unsigned close (a forgery): refused, and the table flagged
    view, refused = fold_verified(view, chain.draft(TableClosed, reason_code="other",
                                                    reason_text="x", supervisor="Sam"), KEY)
    assert refused is not None and view.flagged
    with pytest.raises(BetRefused) as no:
        check_round_takes_bet(view, table_id="T1", round_id="R1", bet="player", position=None,
                              stake=3000, currency="IDR", now=datetime.now(UTC))
    refusal = DoorRefusal(status=no.value.status, code=no.value.code, message=no.value.message)
    led = Ledger()
    led.run(handlers.create_account, CreateAccount(player_id="p1", currency="IDR"))
    led.run(handlers.operator_movement, Deposit(player_id="p1", request_id="d", amount=9000))
    placed = led.run(handlers.place_bet, bet(bet_id="before"))
    refused = led.run(handlers.place_bet, bet(bet_id="after", door_refusal=refusal))
    assert (refused.answer.status, refused.answer.body["error"]["code"]) == (409, "table_flagged")
    assert refused.change is None and led.bet_of("after") is None
    resent = led.run(handlers.place_bet, bet(bet_id="before", door_refusal=refusal))
    assert (resent.answer.status, resent.answer.body) == (200, placed.answer.body)
    assert led.account.balance == 6000


def test_the_wallet_view_anchors_on_the_first_event_it_reads():
    """The view starts an hour back in the log: mid-chain is fine; a gap after it is a
    break, signed or not."""
    chain = opened_round()
    view, refused = fold_verified(None, chain.events[3], KEY)
    assert refused is None and view.last_seq == 4
    after, refused = fold_verified(view, chain.events[5], KEY)
    assert refused is not None and "out of order" in str(refused) and after.flagged
    unsigned = opened_round(Chain(key=None))
    view, _ = fold_verified(None, unsigned.events[3], KEY, accept_unsigned=True)
    view, refused = fold_verified(view, unsigned.events[5], KEY, accept_unsigned=True)
    assert refused is not None and "out of order" in str(refused), "unsigned: a break"


# --- dealer-event, replay ------------------------------------------------------------

def test_dealer_event_signs_what_it_publishes_with_the_setting():
    config = machine_config(Settings(env="development", table_events_key=KEY.decode()))
    assert config.table_events_key == KEY
    signed, unsigned = World(events_key=KEY), World()

    async def deal(w: World) -> list:
        await w.handle([w.raw("A", NewShoe, shoe_id="S1", profile="sbo-baccarat"),
                        w.raw("A", OpenRound, round_id="R1", dealer="Ana")])
        return [parse_table_event(v) for v in w.events("A")]

    events = asyncio.run(deal(signed))
    assert [e.seq for e in events] == [1, 2]
    assert all(auth_problem(e, KEY) is None for e in events)
    # the events in dealer.log are the very ones published, signature and all
    assert [e for entry in signed.log.entries() for e in entry.events] == events
    bare = asyncio.run(deal(unsigned))
    assert all(e.auth is None for e in bare) and "unsigned" in auth_problem(bare[0], KEY)


def test_replay_reports_a_forged_event_and_rebuilds_the_round_from_the_real_ones():
    rec = RecordedRound()
    real = rec.events
    signed = [e.model_copy(update={"auth": event_auth(KEY, e.hash)}) for e in real]
    cards = [i for i, e in enumerate(signed) if isinstance(e, CardDealt)]
    at = cards[-1]
    victim = signed[at]
    forged = seal(CardDealt, table_id=victim.table_id, seq=victim.seq,
                  prev_hash=victim.prev_hash, occurred_at=victim.occurred_at,
                  round_id=victim.round_id, card=parse_card("7C"),
                  shoe_position=victim.shoe_position, round_position=victim.round_position)
    events = [*signed[:at], forged, *signed[at:]]

    def replay(events, key):
        return replay_round(rec.table_id, rec.round_id, events, None, rec.result, rec.decisions,
                            rec.settlements, rec.wallet, events_key=key)

    assert replay(signed, KEY).verdict == "MATCH"
    report = replay(events, KEY)
    assert report.verdict != "MATCH"
    forged_diffs = [d for d in report.differences if "unsigned" in d.recorded]
    assert [d.where for d in forged_diffs] == [f"table.events seq {forged.seq} (card_dealt)"]
    assert [str(c) for c in report.cards] == rec.cards.split(",")
    assert report.chain_breaks == []
    # with another key every event is reported
    assert sum("forged" in d.recorded for d in replay(signed, OTHER).differences) == len(signed)
