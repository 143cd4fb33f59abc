"""Render a replay report for a person (text, a self-contained HTML page) or a system (JSON)."""

from __future__ import annotations

import html
import json

from shared.cards import Card
from shared.replay import BetLine, ReplayReport, winner_text

SUIT_SYMBOL = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}


def _money(amount: int | None) -> str:
    return "-" if amount is None else f"{amount:,}"


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
    lines += [f"    ! {b}" for b in report.chain_breaks]
    lines += ["", "Cards in shoe order: " + " ".join(card_text(c) for c in report.cards)]
    if report.surplus:
        lines.append("Surplus (recorded, not used): " + " ".join(card_text(c) for c in report.surplus))
    for hand, cards in report.hands.items():
        lines.append(f"  {hand:<8} {' '.join(card_text(c) for c in cards):<14} "
                     f"{report.scores.get(hand, '')}")
    if report.winner is not None:
        lines.append(f"  result: {winner_text(report.winner)}")
    lines += ["", "Timeline:"]
    lines += [f"  seq {e.seq:>6}  {e.at:%H:%M:%S.%f}"[:-3] + f"  {e.detail}" for e in report.timeline]
    lines += ["", "Bets" + (f" of player {report.player_id}" if report.player_id else "") + ":"]
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
        lines += [f"      wallet: {m}" for m in b.wallet]
    for note in [*report.notes, *(notes or [])]:
        lines.append(f"note: {note}")
    lines += ["", f"VERDICT: {report.verdict}"]
    for d in report.differences:
        lines.append(f"  - {d.where}: expected {d.expected}; recorded {d.recorded}")
    return "\n".join(lines) + "\n"


def annulled(b: BetLine) -> bool:
    """The bet's settlement was reversed and refunded (or should have been)."""
    return b.reversed is not None or b.expected_reversed is not None or b.refund is not None


def _annul_cell(b: BetLine) -> str:
    if not annulled(b):
        return "-"
    return (f"reversed {_money(b.reversed)} (engine {_money(b.expected_reversed)}), refunded "
            f"{_money(b.refund)} (engine {_money(b.expected_refund)})")


def card_svg(card: Card | None) -> str:
    """One card as inline SVG: no fonts or images to fetch, so the page opens offline."""
    if card is None:
        return ('<svg class="card" viewBox="0 0 60 84" width="60" height="84"><rect x="1" y="1" '
                'width="58" height="82" rx="6" fill="#345" stroke="#123"/></svg>')
    colour = "#c0392b" if card.suit in "HD" else "#1b1b1b"
    rank = "10" if card.rank == "T" else card.rank
    suit = SUIT_SYMBOL[card.suit]
    return (f'<svg class="card" viewBox="0 0 60 84" width="60" height="84" role="img" '
            f'aria-label="{rank}{suit}"><rect x="1" y="1" width="58" height="82" rx="6" '
            f'fill="#fff" stroke="#888"/><text x="6" y="20" font-size="16" fill="{colour}" '
            f'font-family="sans-serif" font-weight="bold">{rank}</text><text x="6" y="36" '
            f'font-size="14" fill="{colour}">{suit}</text><text x="30" y="62" font-size="30" '
            f'text-anchor="middle" fill="{colour}">{suit}</text></svg>')


def to_html(report: ReplayReport, notes: list[str] | None = None) -> str:
    esc = html.escape
    ok = report.verdict == "MATCH"
    hands = "".join(
        f'<div class="hand"><h3>{esc(name)} <span class="score">'
        f'{esc(str(report.scores.get(name, "")))}</span></h3>'
        f'{"".join(card_svg(c) for c in cards)}</div>'
        for name, cards in report.hands.items())
    timeline = "".join(f"<tr><td>{e.seq}</td><td>{e.at:%H:%M:%S.%f}</td><td>{esc(e.detail)}</td></tr>"
                       for e in report.timeline)
    bets = "".join(
        f"<tr><td>{esc(b.bet_id)}</td><td>{esc(b.player_id)}</td><td>{esc(b.bet)}"
        f"{':' + esc(str(b.position)) if b.position is not None else ''}</td>"
        f"<td class=num>{_money(b.stake)}</td><td>{esc(b.decision)}</td>"
        f"<td>{esc(b.outcome or '-')}</td><td class=num>{_money(b.returned)}</td>"
        f"<td>{esc(b.expected_outcome or '-')} {_money(b.expected_returned)}</td>"
        f"<td>{esc(_annul_cell(b))}</td>"
        f"<td>{'<br>'.join(esc(m) for m in b.wallet)}</td></tr>" for b in report.bets)
    diffs = "".join(f"<li><b>{esc(d.where)}</b>: expected {esc(d.expected)}; recorded "
                    f"{esc(d.recorded)}</li>" for d in report.differences)
    breaks = "".join(f"<li>{esc(b)}</li>" for b in report.chain_breaks)
    all_notes = "".join(f"<li>{esc(n)}</li>" for n in [*report.notes, *(notes or [])])
    surplus = "".join(card_svg(c) for c in report.surplus)
    opened = f"{report.opened_at:%Y-%m-%d %H:%M:%S %Z}" if report.opened_at else "-"
    chain = "intact" if not report.chain_breaks else "BROKEN"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>Round {esc(report.round_id)} at {esc(report.table_id)}: {report.verdict}</title>
<style>
body{{font-family:system-ui,sans-serif;margin:2rem;color:#222;background:#f4f6f4}}
.verdict{{padding:1rem 1.5rem;border-radius:8px;font-size:1.6rem;font-weight:bold;color:#fff;
background:{'#1e8449' if ok else '#b03a2e'}}}
.felt{{background:#0b5d3b;padding:1rem;border-radius:12px;display:flex;gap:2rem;flex-wrap:wrap}}
.hand h3{{color:#fff;margin:.2rem 0}}
.score{{background:#fff;color:#0b5d3b;border-radius:4px;padding:0 .4rem}}
.card{{margin-right:4px}} table{{border-collapse:collapse;background:#fff;margin:.5rem 0}}
td,th{{border:1px solid #ccc;padding:.3rem .6rem;font-size:.9rem;text-align:left}} .num{{text-align:right}}
dl{{display:grid;grid-template-columns:max-content auto;gap:.2rem 1rem}}
</style></head><body>
<div class="verdict">{report.verdict}</div>
<h1>Round {esc(report.round_id)} &middot; table {esc(report.table_id)}</h1>
<dl><dt>Profile</dt><dd>{esc(profile_text(report))}</dd><dt>Dealer</dt><dd>{esc(report.dealer or '-')}</dd>
<dt>Shoe</dt><dd>{esc(report.shoe_id or '-')}</dd><dt>Opened</dt><dd>{opened}</dd>
<dt>Status</dt><dd>{esc(report.status)}{' - ' + esc(report.void_reason) if report.void_reason else ''}\
{' after completion - ' + esc(report.annul_reason) if report.annul_reason else ''}</dd>
<dt>Result</dt><dd>{esc(winner_text(report.winner))}</dd>
<dt>Hash chain</dt><dd>{report.chain_checked} events checked: {chain}</dd></dl>
<ul>{breaks}</ul>
<h2>Hands</h2><div class="felt">{hands or '<p style="color:#fff">no hands (round not complete)</p>'}</div>
{f'<h2>Surplus cards (recorded, not used)</h2><div>{surplus}</div>' if surplus else ''}
<h2>Timeline</h2><table><tr><th>seq</th><th>time (UTC)</th><th>event</th></tr>{timeline}</table>
<h2>Bets{' of player ' + esc(report.player_id) if report.player_id else ''}</h2>
<table><tr><th>bet id</th><th>player</th><th>bet</th><th>stake</th><th>decision</th><th>outcome</th>
<th>returned</th><th>rule engine</th><th>annulment</th><th>wallet movements</th></tr>{bets}</table>
{f'<h2>Differences</h2><ul>{diffs}</ul>' if diffs else ''}
{f'<h2>Notes</h2><ul>{all_notes}</ul>' if all_notes else ''}
</body></html>
"""
