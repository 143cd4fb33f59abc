"""The table procedures' tests' helpers: a seed-004 table, a round scanned, what
game-evaluation and bet-settlement make of the table's events, a rebuild of the state."""

from __future__ import annotations

from services.bet_settlement import round_book
from services.dealer_event.state import TableState, fold_into
from services.game_evaluation.evaluator import EvaluationState, observe
from shared.cards import parse_card, parse_cards
from shared.events.bet_events import BetPlaced, BetSettled
from shared.events.chain import verify_chain
from shared.events.inputs import (
    ScanCard,
    ShoeFirstCard,
)
from shared.events.results import RoundResultPublished
from shared.events.table import (
    RoundOpened,
    parse_table_event,
)
from tests.unit.round_book_support import NOW
from tests.unit.table_machine_support import Table

TF_ROUND = "JS,QS,KS,AH,2H,3H,4H,5H,6H,7H,8H,9H"  # 12 cards, fixed deal


def big_small() -> Table:
    """A seed-004 table after its shoe start burn."""
    t = Table()
    t.shoe("baccarat-big-small")
    t.ok(ShoeFirstCard, card=parse_card("5H"))
    return t


def scan(t: Table, round_id: str, cards: str) -> list:
    out = []
    for card in parse_cards(cards):
        out += t.ok(ScanCard, round_id=round_id, card=card)
    return out


def results_of(t: Table) -> list[RoundResultPublished]:
    """What game-evaluation publishes from the table's events: one result per round."""
    view, results = EvaluationState(table_id="T1"), []
    for event in t.events:
        seen = observe(view, event)
        view, results = seen.view, results + ([seen.result] if seen.result else [])
    return results


def settled(t: Table, round_id: str, bets: list[BetPlaced]) -> list[BetSettled]:
    """What bet-settlement writes for `round_id` when it reads the table's events, `bets`
    placed once the round opened, and game-evaluation's result if the round has one."""
    book, out = None, []
    for event in t.events:
        if getattr(event, "round_id", None) != round_id:
            continue
        book, more = round_book.on_table_event(book, event, NOW)
        out += more
        if isinstance(event, RoundOpened):
            for bet in bets:
                book, more = round_book.on_bet(book, bet, NOW)
                out += more
    for result in results_of(t):
        if result.round_id == round_id:
            book, more = round_book.on_result(book, result, NOW)
            out += more
    return [record for _, _, record in out if isinstance(record, BetSettled)]


def assert_rebuilds(t: Table) -> None:
    """A restart folds the log into the very same state (refusals live on their own topic)."""
    assert verify_chain(t.events) == []
    rebuilt = TableState(t.state.table_id)
    for event in t.events:
        fold_into(rebuilt, parse_table_event(event.model_dump_json()))
    rebuilt.refused_inputs = dict(t.state.refused_inputs)
    assert rebuilt == t.state
