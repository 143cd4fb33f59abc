"""The wallet's folded state keeps a window, not the whole history (`WalletFold(window)`,
`CROUPIER_WALLET_STATE_WINDOW_HOURS`; docs/decisions/wallet-window.md).

- keys expire on the fold's clock (the entries' `recorded_at`), never the wall clock, so a
  batch's scratch, the live state and a rebuild forget the same keys at the same entry;
- accounts never expire; a bet's record and its movements' tx ids expire together;
- a command redelivered after its keys expired moves no money: the input checkpoints skip
  an applied input, and an ending or a reversal of a bet no longer held is refused
  (`bet_record_expired`) and dead-lettered, never applied, never dropped;
- the paged history says which movements it still holds;
- a window under 24 h is refused at start;
- the state's size follows the window, not the history.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import random
from datetime import timedelta

import pytest

from services.infra.clock import ManualClock
from services.infra.kernel import OwnLog
from services.infra.own_log import Batch, Landed, PartitionState, fold_entry
from services.infra.replies import Replies
from services.infra.settings import InvalidSetting, Settings
from services.wallet import handlers
from services.wallet.api_models import TransactionsPage
from services.wallet.batches import CommandBatches
from services.wallet.commands import (
    CreateAccount,
    Deposit,
    EndBet,
    Envelope,
    PlaceBet,
    ReverseSettlement,
)
from services.wallet.ledger_fold import Lookups, WalletFold, account_key, bet_key, tx_id_key, tx_key
from shared.events.sources import InputRef
from shared.events.wallet_events import tx_id
from shared.events.wallet_ledger import LedgerEntry
from shared.topics import DEAD_LETTERS_TOPIC, WALLET_LEDGER_TOPIC
from tests.unit.test_wallet_agent_loop import FakeIO, commands, kernel_batch
from tests.unit.test_wallet_handlers import _random_command
from tests.unit.wallet_support import NOW, Ledger, fold_all

WINDOW = timedelta(hours=24)
FOLD = WalletFold(WINDOW)


def place(bet_id: str, stake: int = 1_000, player: str = "p1", round_id: str = "R1"
          ) -> PlaceBet:
    return PlaceBet(player_id=player, bet_id=bet_id, table_id="T1", round_id=round_id,
                    bet="player", stake=stake)


def settle(bet_id: str, returned: int = 2_000, player: str = "p1") -> EndBet:
    return EndBet(player_id=player, bet_id=bet_id, ending="settled", returned=returned,
                  settlement_id=f"s:{bet_id}", table_id="T1", round_id="R1")


def reverse(bet_id: str, amount: int = 2_000) -> ReverseSettlement:
    return ReverseSettlement(player_id="p1", bet_id=bet_id, reversal_id=f"r:{bet_id}",
                             settlement_id=f"s:{bet_id}", amount=amount, table_id="T1",
                             round_id="R1")


def refund(bet_id: str, returned: int = 1_000) -> EndBet:
    return EndBet(player_id="p1", bet_id=bet_id, ending="voided", returned=returned,
                  settlement_id=f"v:{bet_id}", table_id="T1", round_id="R1")


@pytest.fixture
def ledger() -> Ledger:
    led = Ledger(fold=FOLD)
    led.handle(CreateAccount(player_id="p1", currency="IDR"))
    led.handle(Deposit(player_id="p1", request_id="d1", amount=10_000))
    return led


def later(ledger: Ledger, at, n: int = 1) -> None:
    """Other players' commands at `at`: the fold's clock moves on, p1's state does not."""
    for i in range(n):
        ledger.handle(CreateAccount(player_id=f"other-{at.isoformat()}-{i}", currency="IDR"),
                      at)


# --- the fold's clock -------------------------------------------------------------------

def test_keys_expire_on_the_folds_clock_never_the_wall_clock(ledger):
    ledger.handle(place("b1"))
    keys = {bet_key("p1", "b1"), tx_key("p1", 2), tx_id_key("p1", tx_id("stake_debit", "b1"))}
    assert keys <= set(ledger.kv)
    # no entry for any time: nothing expires, however long ago NOW is by the wall clock
    assert NOW.year < 2027 and keys <= set(ledger.kv)
    later(ledger, NOW + WINDOW - timedelta(seconds=1))
    assert keys <= set(ledger.kv)  # a second before the window passed
    later(ledger, NOW + WINDOW)
    assert not keys & set(ledger.kv)  # the entry that reaches the deadline forgets them
    assert ledger.account.balance == 9_000 and account_key("p1") in ledger.kv  # kept
    assert ledger.state.clock == NOW + WINDOW


def test_a_rewritten_group_lives_a_window_after_its_last_write(ledger):
    """A bet's record and its movements' tx ids are one group: the settlement a day later
    keeps the debit's tx id too (a retried bet is answered as placed, never debited again)."""
    ledger.handle(place("b1"))
    ledger.handle(settle("b1"), NOW + WINDOW - timedelta(hours=1))
    later(ledger, NOW + WINDOW + timedelta(hours=1))
    assert ledger.bet_of("b1").status == "settled"
    assert tx_id_key("p1", tx_id("stake_debit", "b1")) in ledger.kv
    assert tx_key("p1", 2) not in ledger.kv  # the history expires by itself, oldest first
    retry = ledger.handle(place("b1"), NOW + WINDOW + timedelta(hours=1))
    assert retry.answer.status == 200 and retry.change is None


def test_a_window_under_a_day_is_refused():
    with pytest.raises(ValueError, match="at least"):
        WalletFold(timedelta(hours=23))
    assert Settings(env="development").wallet_state_window() == timedelta(days=30)
    assert Settings(env="development", wallet_state_window_hours=24).wallet_state_window() \
        == timedelta(hours=24)
    with pytest.raises(InvalidSetting, match="CROUPIER_WALLET_STATE_WINDOW_HOURS=23"):
        Settings(env="development", wallet_state_window_hours=23).wallet_state_window()


def test_the_wallet_refuses_to_start_with_a_window_under_a_day(monkeypatch):
    from services.wallet import bootstrap

    monkeypatch.setattr(bootstrap, "make_app", lambda *a, **k: pytest.fail("started anyway"))
    with pytest.raises(InvalidSetting) as refused:
        bootstrap.bootstrap(Settings(env="development", wallet_state_window_hours=12))
    assert "CROUPIER_WALLET_STATE_WINDOW_HOURS=12 is below 24 hours" in str(refused.value)


# --- live, batch scratch and rebuild: one fold -------------------------------------------

@pytest.mark.parametrize("seed", range(6))
def test_live_batches_and_rebuild_forget_the_same_keys(seed):
    """Seeded random commands over five windows, decided in batches as the kernel decides
    them: a batch decides on the state its log was folded to (its scratch forgets nothing:
    the broker's time of its entries is not known before they land); once they land, the
    live state is the fold of the log (by each entry's time), which keeps every key the
    batch saw but those its entries' times expired; and the entries alone, refolded, give
    the same state and the same expiry bookkeeping."""
    rng = random.Random(seed)
    players = ["p1", "p2", "p3"]
    cmds = [CreateAccount(player_id=p, currency="IDR") for p in players]
    cmds += [_random_command(rng, players) for _ in range(600)]
    step = 5 * WINDOW / len(cmds)
    state: PartitionState = PartitionState(0)
    reference: PartitionState = PartitionState(0)  # folded entry by entry, as they land
    log: list[tuple[int, bytes]] = []
    ids = itertools.count(1)
    offset, at, expired_reads, expired_in_batch = 0, NOW, 0, 0
    while cmds:
        batch = Batch(state, FOLD, lambda: f"w0:{next(ids)}")
        before = set(state.kv)
        for _ in range(rng.randrange(1, 20)):
            if not cmds:
                break
            at += step * rng.uniform(0.2, 1.8)
            outcome = handlers.handle(Envelope(command=cmds.pop(0)), at, Lookups(batch.scratch))
            expired_reads += outcome.dead_letter is not None
            if outcome.change is not None:
                source = InputRef(topic="wallet-commands", partition=0, offset=offset)
                made = batch.add(lambda entry_id, prev, through, c=outcome.change, s=source,
                                 t=at: c.entry(entry_id, prev, through, s, t))
                assert fold_entry(reference, batch.expected[-1], made, FOLD, at)
            offset += 1
        seen = dict(batch.scratch)
        assert before <= set(seen)  # nothing expired in the batch's scratch
        # each record (a pack of entries) appended once its last entry was written
        ends = [*batch.packs.firsts[1:], len(batch.entries)][:len(batch.packs.firsts)]  # none: no record
        landed = [Landed(o, batch.entries[end - 1].recorded_at)
                  for o, end in zip(batch.expected, ends, strict=True)]
        log += [(o, e.model_dump_json().encode()) for o, e in batch.commit(landed)]
        assert state.kv == reference.kv
        assert {k: seen[k] for k in state.kv} == state.kv  # what it saw, less the expired
        expired_in_batch += len(seen) > len(state.kv)
    rebuilt = fold_all([(o, LedgerEntry.model_validate_json(raw)) for o, raw in log], FOLD)
    assert rebuilt.kv == state.kv
    assert (rebuilt.clock, rebuilt.deadlines, rebuilt.expires, rebuilt.members) == (
        state.clock, state.deadlines, state.expires, state.members)
    everything = fold_all([(o, LedgerEntry.model_validate_json(raw)) for o, raw in log])
    assert len(state.kv) < len(everything.kv) / 2  # it did forget
    assert [a for k, a in sorted(state.kv.items()) if k.startswith("a/")] == [
        a for k, a in sorted(everything.kv.items()) if k.startswith("a/")]  # accounts kept
    assert expired_reads > 0  # some ending came for a bet no longer held
    assert expired_in_batch > 0  # some batch's own entries expired keys it had seen


# --- money: nothing moves twice ---------------------------------------------------------

class Wallet:
    """The kernel's `apply_batch` over an in-memory ledger, a clock, and input offsets."""

    def __init__(self) -> None:
        self.replies, self.clock = Replies(), ManualClock(NOW)
        self.io = FakeIO(broker=self.clock.now)  # the broker's clock: the worker's, unless
        # a test gives the worker another
        self.own = OwnLog("wallet", WALLET_LEDGER_TOPIC, FOLD, LedgerEntry.model_validate_json,
                          lambda e: e.account.player_id.encode(), "w0")
        self.own.io = self.io
        self.batches = CommandBatches(self.replies, self.clock)
        self.offset = 0

    def send(self, *cmds, at_offset: int | None = None):
        first = self.offset if at_offset is None else at_offset
        events = commands(*cmds, first_offset=first)
        if at_offset is None:
            self.offset += len(cmds)
        return kernel_batch(self.own, self.io, self.batches, self.replies, events)

    def after(self, delta: timedelta) -> None:
        """Time passes and another player's command is folded at it (the fold's clock)."""
        self.clock.advance(delta.total_seconds())
        self.send(CreateAccount(player_id=f"other-{self.offset}", currency="IDR"))

    @property
    def state(self) -> PartitionState:
        return self.own.states[0]

    @property
    def balance(self) -> int:
        return Lookups(self.state.kv).account("p1").balance

    def dead_letters(self) -> list[dict]:
        return [json.loads(v) for t, _, v in self.io.published if t == DEAD_LETTERS_TOPIC]


    def refold(self) -> PartitionState:
        """The ledger folded by a worker starting on an empty disk (a rebuild)."""
        fresh = OwnLog("wallet", WALLET_LEDGER_TOPIC, FOLD, LedgerEntry.model_validate_json,
                       lambda e: e.account.player_id.encode(), "w9")
        fresh.io = self.io
        return asyncio.run(fresh.recover(0))


@pytest.fixture
def wallet() -> Wallet:
    w = Wallet()
    w.send(CreateAccount(player_id="p1", currency="IDR"),
           Deposit(player_id="p1", request_id="d1", amount=10_000))
    return w


def test_a_redelivered_input_after_its_keys_expired_is_skipped_by_the_checkpoints(wallet):
    """The deposit's tx id expired, but its input record, delivered again (Faust handing on
    from behind, a rebalance), is one the ledger says it applied: skipped, nothing moves."""
    wallet.after(2 * WINDOW)
    assert tx_id_key("p1", tx_id("deposit", "d1")) not in wallet.state.kv
    again = wallet.send(Deposit(player_id="p1", request_id="d1", amount=10_000), at_offset=1)
    assert again[0].body["error"]["code"] == "rebalancing"  # not this decision's to answer
    assert wallet.balance == 10_000 and wallet.state.applied(
        "test-wallet-commands", 0, 1)


def test_an_ending_forwarded_again_after_its_bet_expired_moves_no_money(wallet):
    wallet.send(place("b1"), settle("b1"))
    assert wallet.balance == 11_000
    wallet.after(WINDOW + timedelta(hours=1))
    assert Lookups(wallet.state.kv).bet_of("p1", "b1") is None
    entries = len(wallet.io.entries())
    (answer,) = wallet.send(settle("b1"))  # a new record of the commands topic: re-forwarded
    assert (answer.status, answer.body["error"]["code"]) == (409, "bet_record_expired")
    assert wallet.balance == 11_000 and len(wallet.io.entries()) == entries  # nothing written
    (letter,) = wallet.dead_letters()
    assert letter["error_type"] == "LateEnding"
    assert letter["error"].startswith("bet_record_expired:")
    assert tx_id("payout", "s:b1") in letter["error"]  # what to look for in the archive


def test_a_late_first_ending_is_refused_and_dead_lettered_never_paid(wallet):
    """The bet's settlement came after the window (bet-settlement down for longer than it):
    refused with its reason and kept in dead.letters for the operator, never credited."""
    wallet.send(place("b1"))
    wallet.after(WINDOW + timedelta(minutes=1))
    (answer,) = wallet.send(settle("b1", returned=1_950))
    assert answer.body["error"]["code"] == "bet_record_expired"
    assert wallet.balance == 9_000
    (letter,) = wallet.dead_letters()
    assert "1950 minor units" in letter["error"] and "apply it by hand" in letter["error"]
    # delivered again, the same record: the same dead letter's id, still nothing moved
    wallet.send(settle("b1", returned=1_950), at_offset=wallet.offset - 1)
    assert {d["dead_letter_id"] for d in wallet.dead_letters()} == {letter["dead_letter_id"]}
    assert wallet.balance == 9_000


def test_an_ending_of_a_bet_never_placed_is_a_breach_while_the_players_history_is_whole(
        wallet):
    """Without the bet's record the wallet tells "never debited" from "expired" by the
    player's history: while none of it expired, it is the breach it always was."""
    (answer,) = wallet.send(settle("never"))
    assert answer.body["error"]["code"] == "unknown_bet" and not wallet.dead_letters()
    wallet.after(WINDOW + timedelta(minutes=1))  # p1's deposit (seq 1) expired
    (answer,) = wallet.send(settle("never"))
    assert answer.body["error"]["code"] == "bet_record_expired"  # refused either way
    assert len(wallet.dead_letters()) == 1 and wallet.balance == 10_000


def test_a_reversal_again_moves_no_money_while_its_bet_is_held_or_after_it_expired(wallet):
    """The reversal's own tx id is older than the window when it comes again, but the
    refund that followed kept the bet's group (its record and every movement's tx id)
    alive: a duplicate. After the group expired: refused and dead-lettered."""
    wallet.send(place("b1"), settle("b1"))
    wallet.clock.advance(3600)
    wallet.send(reverse("b1"))
    wallet.clock.advance((WINDOW - timedelta(hours=2)).total_seconds())
    wallet.send(refund("b1"))  # (in life it follows at once; late here, to keep the group)
    assert wallet.balance == 10_000  # stake back, payout taken back
    wallet.after(timedelta(hours=2))  # the reversal's own deadline passed...
    assert Lookups(wallet.state.kv).bet_of("p1", "b1").status == "voided"  # ...not its group's
    (again,) = wallet.send(reverse("b1"))
    assert again.status == 200 and wallet.balance == 10_000
    wallet.after(WINDOW)
    (late,) = wallet.send(reverse("b1"))
    assert late.body["error"]["code"] == "bet_record_expired" and wallet.balance == 10_000
    assert [d["error"].split(":")[0] for d in wallet.dead_letters()] == ["bet_record_expired"]


def test_a_settlement_again_within_the_window_is_the_duplicate_it_always_was(wallet):
    wallet.send(place("b1"), settle("b1"))
    wallet.after(WINDOW - timedelta(minutes=1))
    (again,) = wallet.send(settle("b1"))
    assert again.status == 200 and wallet.balance == 11_000 and not wallet.dead_letters()


# --- the paged history ------------------------------------------------------------------

def test_the_history_says_what_it_holds(ledger):
    for i in range(5):
        ledger.handle(place(f"b{i}"), NOW + timedelta(hours=i))
    look = ledger.look
    assert look.oldest_held_seq("p1") == 1 and not look.history_expired("p1")
    later(ledger, NOW + WINDOW + timedelta(hours=2, minutes=30))  # deposit, b0..b2 expired
    assert look.oldest_held_seq("p1") == 5 and look.history_expired("p1")
    assert look.tx_at("p1", 4) is None and look.tx_at("p1", 5) is not None
    later(ledger, NOW + 3 * WINDOW)
    assert look.oldest_held_seq("p1") == ledger.account.tx_count + 1  # none held
    assert look.oldest_held_seq("nobody") == 1


def test_the_transactions_page_starts_at_the_oldest_held_and_names_the_archive(ledger):
    from services.wallet.views import history_page

    for i in range(5):
        ledger.handle(place(f"b{i}"), NOW + timedelta(hours=i))
    full = history_page(ledger.look, ledger.account, 0, 100)
    assert (len(full["items"]), full["oldest_held_seq"], full["older_in_archive"]) == (
        6, 1, False)
    later(ledger, NOW + WINDOW + timedelta(hours=2, minutes=30))
    body = history_page(ledger.look, ledger.account, 0, 2)
    assert [t["tx_id"] for t in body["items"]] == [tx_id("stake_debit", "b3"),
                                                   tx_id("stake_debit", "b4")]
    assert (body["oldest_held_seq"], body["older_in_archive"], body["next_after"]) == (
        5, True, None)
    assert history_page(ledger.look, ledger.account, 5, 10)["items"][0]["tx_id"] == tx_id(
        "stake_debit", "b4")
    TransactionsPage.model_validate(body)  # the OpenAPI's model


# --- the state's size -------------------------------------------------------------------

def fold_size(n: int, windows: int, players: int = 20) -> dict[str, int]:
    """`n` commands (a bet and its settlement each second one, a deposit now and then) of
    `players` players, spread evenly over `windows` windows: what the state holds."""
    led = Ledger(fold=FOLD)
    for p in range(players):
        led.handle(CreateAccount(player_id=f"p{p}", currency="IDR"))
        led.handle(Deposit(player_id=f"p{p}", request_id="d0", amount=10**9))
    span = windows * WINDOW
    for i in range(n):
        player, at = f"p{i % players}", NOW + span * (i / n)
        pair = i // 2
        if i % 2 == 0:
            led.handle(place(f"b{pair}", player=player, round_id=f"R{pair}"), at)
        else:
            led.handle(settle(f"b{pair}", returned=2_000 * (pair % 2), player=f"p{(i - 1) % players}"),
                       at)
    state = led.state
    return {"kv": len(state.kv), "deadlines": len(state.deadlines),
            "expires": len(state.expires), "members": len(state.members)}


def test_the_state_follows_the_window_not_the_history():
    one_small, ten_small = fold_size(100, 1), fold_size(100, 10)
    one, ten = fold_size(10_000, 1), fold_size(10_000, 10)
    same_rate = fold_size(1_000, 1)  # a window's worth at the rate of `ten`
    print(f"\nkv keys: 100 cmds over 1 window {one_small['kv']}, over 10 windows "
          f"{ten_small['kv']}; 10,000 cmds over 1 window {one['kv']}, over 10 windows "
          f"{ten['kv']}; 1,000 cmds over 1 window {same_rate['kv']}; bookkeeping over 10 "
          f"windows {ten}")
    # over one window nothing expires: every key of the history is held
    assert one["kv"] > 5 * 10_000 // 2
    # over ten windows, a tenth: the state is one window's worth at the same rate
    assert ten["kv"] < one["kv"] / 5 and ten_small["kv"] < one_small["kv"] / 3
    assert abs(ten["kv"] - same_rate["kv"]) < same_rate["kv"] / 10
    assert max(ten["deadlines"], ten["expires"], ten["members"]) <= same_rate["kv"]


# --- a clock no single writer can push (issue 29, bug a) --------------------------------

def test_a_worker_whose_clock_runs_ahead_expires_nobodys_keys(wallet):
    """A worker whose clock was reset to a date ten days ahead takes the partition and
    writes one entry (another player's account). The fold's clock is the broker's, not that
    worker's: the deposit and the bet sent again afterwards, to it or to anyone, are the
    ones the ledger holds and get their first answers; no money moves twice."""
    (placed,) = wallet.send(place("b1"))
    (deposit,) = wallet.send(Deposit(player_id="p1", request_id="d2", amount=500))
    assert (placed.status, deposit.status, wallet.balance) == (201, 201, 9_500)
    ahead = ManualClock(NOW + 10 * WINDOW)  # the skewed worker's wall clock
    wallet.batches = CommandBatches(wallet.replies, ahead)
    wallet.send(CreateAccount(player_id="other", currency="IDR"))
    assert wallet.io.entries()[-1].recorded_at == ahead.now()
    assert wallet.state.clock < NOW + WINDOW  # the broker's time held the writer's back
    for state in (wallet.state, wallet.refold()):  # live, and a worker folding from 0
        assert Lookups(state.kv).bet_of("p1", "b1") is not None
        assert tx_id_key("p1", tx_id("deposit", "d2")) in state.kv
    entries = len(wallet.io.entries())
    (bet_again, deposit_again) = wallet.send(
        place("b1"), Deposit(player_id="p1", request_id="d2", amount=500))
    assert (bet_again.status, bet_again.body) == (200, placed.body)
    assert (deposit_again.status, deposit_again.body) == (200, deposit.body)
    assert wallet.balance == 9_500 and len(wallet.io.entries()) == entries
    # the right worker back: the same first answers, nothing moved
    wallet.batches = CommandBatches(wallet.replies, wallet.clock)
    (again,) = wallet.send(Deposit(player_id="p1", request_id="d2", amount=500))
    assert (again.status, again.body, wallet.balance) == (200, deposit.body, 9_500)
