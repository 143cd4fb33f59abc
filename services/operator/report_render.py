"""Render a replay report for a person (text, a self-contained HTML page) or a system (JSON)."""

from __future__ import annotations

import json

from jinja2 import Environment, PackageLoader, StrictUndefined

from services.operator.replay import (
    BetLine,
    CorrectionLine,
    ReplayReport,
    SettlementStep,
    winner_text,
)
from services.operator.replay_calls import call_text
from shared.cards import Card
from shared.roads import ROWS, BaccaratRoads, Cell
from shared.shoe_history import ShoeRoads

SUIT_SYMBOL = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}
# the report formats, and the media type each is served as
CONTENT_TYPES = {"text": "text/plain", "json": "application/json", "html": "text/html"}


def amount_text(amount: int | None) -> str:
    """Minor units as they are, grouped (the report's bets carry no currency)."""
    return "-" if amount is None else f"{amount:,}"


_money = amount_text


def card_text(card: Card | None) -> str:
    if card is None:
        return "??"
    rank = "10" if card.rank == "T" else card.rank
    return rank + SUIT_SYMBOL[card.suit]


def profile_text(report: ReplayReport) -> str:
    """`sbo-baccarat v2 (digest 3fe54ee084d4)`: the rules the round was played and settled by."""
    if report.profile is None:
        return "-"
    version = f" v{report.profile_version}" if report.profile_version else ""
    digest = f" (digest {report.profile_digest[:12]})" if report.profile_digest else ""
    return f"{report.profile}{version}{digest}"


def to_json(report: ReplayReport, extra: dict | None = None) -> str:
    data = report.model_dump(mode="json")
    data["verdict"] = report.verdict
    data.update(extra or {})
    return json.dumps(data, indent=2)


def to_text(report: ReplayReport, notes: list[str] | None = None) -> str:
    """The report for a person at a terminal: the round, its cards and hands, its timeline,
    the bets, then the verdict with each difference."""
    lines = [*_text_heading(report), "", *_text_cards(report), *_text_corrections(report),
             "", "Timeline:"]
    lines += [f"  seq {e.seq:>6}  {e.at:%H:%M:%S.%f}"[:-3] + f"  {e.detail}" for e in report.timeline]
    lines += ["", *_text_bets(report), *_text_unplaced(report)]
    lines += [f"note: {note}" for note in [*report.notes, *(notes or [])]]
    lines += _text_roads(report.roads)
    lines += ["", f"VERDICT: {report.verdict}"]
    lines += [f"  - {d.where}: expected {d.expected}; recorded {d.recorded}"
              for d in report.differences]
    return "\n".join(lines) + "\n"


def _text_heading(report: ReplayReport) -> list[str]:
    """Which round, under which rules, how it ended, and whether its hash chain holds."""
    lines = [
        f"Round {report.round_id} at table {report.table_id}",
        f"  profile {profile_text(report)}, dealer {report.dealer}, shoe {report.shoe_id}, "
        f"opened {report.opened_at:%Y-%m-%d %H:%M:%S %Z}" if report.opened_at else "  (not opened)",
        f"  status: {report.status}" + (f" ({report.void_reason})" if report.void_reason else "")
        + (f" after completion ({report.annul_reason})" if report.annul_reason else ""),
        f"  hash chain: {report.chain_checked} events checked"
        + (f" from the event after seq {report.chain_anchor_seq}" if report.chain_anchor_seq else "")
        + (": intact" if not report.chain_breaks else ": BROKEN"),
    ]
    if report.wallet_mode == "seamless":
        lines.append("  wallet: seamless (the operator's wallet holds the balance; each bet's "
                     "calls to it and its answers are listed under the bet)")
    return lines + [f"    ! {b}" for b in report.chain_breaks]


def _text_cards(report: ReplayReport) -> list[str]:
    """The cards in shoe order, the surplus, each hand with its score, and the result."""
    lines = ["Cards in shoe order: " + " ".join(card_text(c) for c in report.cards)]
    if report.surplus:
        lines.append("Surplus (recorded, not used): " + " ".join(card_text(c) for c in report.surplus))
    for hand, cards in report.hands.items():
        lines.append(f"  {hand:<8} {' '.join(card_text(c) for c in cards):<14} "
                     f"{report.scores.get(hand, '')}")
    if report.winner is not None:
        lines.append(f"  result: {winner_text(report.winner)}")
    return lines


def cards_text(cards: list[Card]) -> str:
    return " ".join(card_text(c) for c in cards)


def _text_corrections(report: ReplayReport) -> list[str]:
    """Each correction after the fact (seed 004 §5): who, when, why, the cards it replaced
    and its cards, its hands and the rule engine's result (and the published one if it
    differs)."""
    lines = []
    for c in report.corrections:
        lines += ["", correction_heading(c),
                  f"  replaced: {cards_text(c.replaced_cards)}", f"  cards:    {cards_text(c.cards)}"]
        lines += [f"  {hand:<8} {cards_text(cards):<14} {c.scores.get(hand, '')}"
                  for hand, cards in c.hands.items()]
        published = "" if c.recorded_winner == c.winner else \
            f"; published: {winner_text(c.recorded_winner)}"
        lines.append(f"  result: {winner_text(c.winner)} ({c.result_id}{published})")
    return lines


def correction_heading(c: CorrectionLine) -> str:
    return (f"Correction {c.correction} by {c.supervisor} at {c.at:%Y-%m-%d %H:%M:%S %Z} "
            f"(seq {c.seq}): {c.reason_code} - {c.reason_text}")


def history_text(b: BetLine) -> str:
    """`settle:b1 win 1,950 -> reversed 1,950 -> settle:b1:c1 lose 0; net -1,000 (rule engine:
    -1,000)`: a corrected bet's settlements in order, and what the wallet moved in all."""
    def step(s: SettlementStep) -> str:
        if s.what == "reversed":
            engine = "" if s.amount == s.expected_amount else \
                f" (rule engine: {_money(s.expected_amount)})"
            return f"reversed {_money(s.amount)}{engine}"
        engine = "" if (s.outcome, s.amount) == (s.expected_outcome, s.expected_amount) else \
            f" (rule engine: {s.expected_outcome or '-'} {_money(s.expected_amount)})"
        return f"{s.record_id} {s.outcome or '-'} {_money(s.amount)}{engine}"
    return (" -> ".join(step(s) for s in b.history)
            + f"; net {_money(b.net)} (rule engine: {_money(b.expected_net)})")


def corrected(b: BetLine) -> bool:
    """The bet was settled again after a correction (or should have been)."""
    return len(b.history) > 1


def _text_roads(roads: ShoeRoads | None) -> list[str]:
    """The shoe's counts up to the round, and its big road as letters (B, P; a tie is the
    count beside the bead)."""
    if roads is None:
        return []
    head = f"Roads of shoe {roads.shoe_id} up to this round"
    head += "" if roads.complete else " (incomplete: see the JSON report)"
    if not isinstance(roads.roads, BaccaratRoads):
        tallies = ", ".join(f"{name} {p.win}-{p.lose}-{p.tie}"
                            for name, p in roads.roads.positions.items())
        return ["", f"{head}: {roads.roads.hands} hands; win-lose-tie {tallies}"]
    c = roads.roads.counts
    lines = ["", f"{head}: {c.hands} hands, banker {c.banker}, player {c.player}, "
                 f"tie {c.tie}, player pairs {c.player_pair}, banker pairs {c.banker_pair}"]
    for row in grid(roads.roads.big_road.cells, roads.roads.big_road.columns):
        lines.append("  " + "".join(
            "." if cell is None else getattr(cell, "side", "?")[0].upper() for cell in row))
    return lines


def grid(cells: tuple[Cell, ...], columns: int) -> list[list[Cell | None]]:
    """A road's cells as rows of its six rows by `columns`: each a cell or None (empty)."""
    rows: list[list[Cell | None]] = [[None] * columns for _ in range(ROWS)]
    for cell in cells:
        rows[cell.row][cell.col] = cell
    return rows


def _text_bets(report: ReplayReport) -> list[str]:
    """Each bet, recorded against the rule engine, its annulment and its wallet movements."""
    lines = ["Bets" + (f" of player {report.player_id}" if report.player_id else "") + ":"]
    if not report.bets:
        lines.append("  (none)")
    for b in report.bets:
        where = f":{b.position}" if b.position is not None else ""
        lines.append(f"  {b.bet_id}  {b.player_id}  {b.bet}{where}  stake {_money(b.stake)}  "
                     f"{b.decision}  -> {b.outcome or '-'} returned {_money(b.returned)} "
                     f"(rule engine: {b.expected_outcome or '-'} {_money(b.expected_returned)})")
        if annulled(b):
            lines.append(f"      annulled: settlement reversed, {_money(b.reversed)} taken back "
                         f"(rule engine: {_money(b.expected_reversed)}); then refunded "
                         f"{_money(b.refund)} (rule engine: {_money(b.expected_refund)})")
        if corrected(b):
            lines.append(f"      settlements: {history_text(b)}")
        lines += [f"      wallet: {m}" for m in b.wallet]
        lines += [f"      operator: {call_text(c)}" for c in b.operator_calls]
    return lines


def _text_unplaced(report: ReplayReport) -> list[str]:
    """Seamless mode: the bets whose debit the operator's wallet refused or never answered
    (never placed), with their calls."""
    if not report.unplaced_bets:
        return []
    lines = ["", "Bets not placed (the operator's wallet refused or did not answer the debit):"]
    for u in report.unplaced_bets:
        lines.append(f"  {u.bet_id}  {u.player_id}  stake {_money(u.stake)} {u.currency}  "
                     f"debit {u.outcome}")
        lines += [f"      operator: {call_text(c)}" for c in u.operator_calls]
    return lines


def annulled(b: BetLine) -> bool:
    """The bet's settlement was reversed and refunded (or should have been)."""
    return b.reversed is not None or b.expected_reversed is not None or b.refund is not None


def annul_cell(b: BetLine) -> str:
    if not annulled(b):
        return "-"
    return (f"reversed {_money(b.reversed)} (engine {_money(b.expected_reversed)}), refunded "
            f"{_money(b.refund)} (engine {_money(b.expected_refund)})")


_PAGES = Environment(loader=PackageLoader("services.operator", "templates"), autoescape=True,
                     keep_trailing_newline=True, undefined=StrictUndefined)


# what the report's templates call (_report_body.html): the report's own page and the
# console's complaint page render the same body with these
REPORT_HELPERS = dict(suit_symbol=SUIT_SYMBOL, money=_money, profile_text=profile_text,
                      winner_text=winner_text, annul_cell=annul_cell, grid=grid,
                      cards_text=cards_text, correction_heading=correction_heading,
                      history_text=history_text, corrected=corrected, call_text=call_text)


def to_html(report: ReplayReport, notes: list[str] | None = None) -> str:
    """A self-contained page (inline CSS and SVG cards): the markup is in
    templates/replay_report.html, autoescaped, so no value from the log can inject markup."""
    return _PAGES.get_template("replay_report.html").render(
        report=report, notes=[*report.notes, *(notes or [])], **REPORT_HELPERS)


def render(report: ReplayReport, fmt: str, notes: list[str] | None = None) -> str:
    """The report in `fmt` (text, json or html; see CONTENT_TYPES), with the replay's own
    notes: the one entry point the CLI and the operator API share, so a format renders the
    same wherever it is asked for."""
    if fmt == "text":
        return to_text(report, notes)
    if fmt == "json":
        return to_json(report, {"notes_extra": notes})
    if fmt == "html":
        return to_html(report, notes)
    raise ValueError(f"format must be one of {sorted(CONTENT_TYPES)}, not {fmt!r}")
