"""What the demo shows in the terminal: live progress, then the summary."""

from __future__ import annotations

from collections import Counter

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from services.demo.session import FOREVER, DemoConfig
from services.demo.summary import DemoSummary
from services.simulators.tables.driver import SimSummary


def _money(amount: int) -> str:
    return f"{amount:,}"


def progress_table(config: DemoConfig, tables: dict[str, SimSummary], answers: Counter,
                   seconds: float) -> Table:
    target = "∞" if config.rounds >= FOREVER or config.forever else str(config.rounds)
    table = Table(title=f"croupier demo {config.run_id} - {seconds:5.1f} s", expand=False)
    for column in ("table", "profile", "rounds", "voided", "shoes", "inputs", "refused"):
        table.add_column(column, justify="right" if column not in ("table", "profile") else "left")
    for table_id, s in tables.items():
        table.add_row(table_id, s.profile, f"{s.rounds_completed}/{target}", str(s.rounds_voided),
                      str(s.shoes), str(s.inputs_sent), str(sum(s.refused.values())))
    placed = sum(n for code, n in answers.items() if code in ("200", "201"))
    refused = sum(answers.values()) - placed
    table.caption = f"bets placed {placed:,}, refused by the wallet {refused:,} (on purpose: " \
                    "below minimum, not offered, bad position, no funds, closed round)"
    return table


def render_summary(summary: DemoSummary) -> Group:
    """The summary's tables: counts and money, realised against exact RTP, invariants."""
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column(justify="right")
    for label, value in [
        ("rounds", f"{summary.rounds:,} ({summary.rounds_voided} voided)"),
        ("bets", f"{summary.bets:,}: settled {summary.bets_settled:,}, voided "
                 f"{summary.bets_voided:,}, rejected {summary.bets_rejected:,}"),
        ("stakes", _money(summary.stake)),
        ("payouts", _money(summary.payout)),
        ("refunds", _money(summary.refunds)),
        ("house result", _money(summary.house_result)),
        ("time", f"{summary.seconds:.1f} s"),
    ]:
        head.add_row(label, value)

    rtp = Table(title="realised RTP beside exact RTP, per bet type (money in minor units)")
    for column in ("profile", "bet", "bets", "stake", "returned", "realised", "exact", "z"):
        rtp.add_column(column, justify="left" if column in ("profile", "bet") else "right")
    for r in summary.returns:
        rtp.add_row(r.profile, r.bet, str(r.bets), _money(r.stake), _money(r.returned),
                    f"{r.realised_rtp:.2%}", f"{r.exact_rtp:.2%}",
                    "-" if r.z_score is None else f"{r.z_score:+.2f}")

    checks = Table(title="invariants")
    checks.add_column("check")
    checks.add_column("checked", justify="right")
    checks.add_column("result")
    for c in summary.invariants:
        checks.add_row(c.name, str(c.checked), "[green]OK[/]" if c.ok else
                       f"[red]BREACH[/] {'; '.join(c.problems[:3])}")

    return Group(head, rtp, checks)


def print_copyable(console: Console, text: str, style: str | None = None) -> None:
    """Print a line a person copies (a command, an address) whole, on one line, whatever
    the console's width: piped or logged, rich assumes 80 columns and would cut or fold it."""
    console.print(Text(text, style=style or ""), soft_wrap=True)


def print_summary(console: Console, summary: DemoSummary) -> None:
    """The summary: tables that may wrap at a narrow width, then where to look and the
    replay command, each printed whole (`print_copyable`), then the verdict."""
    console.print(render_summary(summary))
    console.print(Text("Where to look", style="bold"))
    width = max((len(name) for name in summary.urls), default=0)
    for name, url in summary.urls.items():
        print_copyable(console, f"{name:<{width}}  {url}")
    if summary.sample_round:
        console.print(Text(f"A real round to replay ({summary.sample_round.table_id} / "
                           f"{summary.sample_round.round_id}):", style="bold"))
        print_copyable(console, f"  {summary.sample_round.replay_command}")
    verdict = "ALL INVARIANTS HOLD" if summary.invariants_ok else "INVARIANT BREACH"
    console.print(Text(verdict, style="bold green" if summary.invariants_ok else "bold red"))
