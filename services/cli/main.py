"""The `croupier` command: one entry point, one module per group of subcommands."""

import typer

from services.cli import (
    archive_cmd,
    complaint_cmd,
    dead_letters_cmd,
    demo_cmd,
    evaluate_cmd,
    kafka_cmd,
    operator_api_cmd,
    operator_wallet_cmd,
    profiles_cmd,
    rebuild_cmd,
    reconcile_cmd,
    records_cmd,
    replay_cmd,
    risk_cmd,
    rtp_cmd,
    schemas_cmd,
    simulate_players_cmd,
    simulate_table_cmd,
    stats_cmd,
    topics_cmd,
)

app = typer.Typer(
    name="croupier",
    help="Settlement platform for live-dealer baccarat and Triple Face tables.",
    no_args_is_help=True,
    add_completion=False,
)

kafka_cmd.register(app)
topics_cmd.register(app)
evaluate_cmd.register(app)
rtp_cmd.register(app)
schemas_cmd.register(app)
replay_cmd.register(app)
complaint_cmd.register(app)
simulate_table_cmd.register(app)
simulate_players_cmd.register(app)
demo_cmd.register(app)
rebuild_cmd.register(app)
reconcile_cmd.register(app)
operator_api_cmd.register(app)
operator_wallet_cmd.register(app)
profiles_cmd.register(app)
dead_letters_cmd.register(app)
archive_cmd.register(app)
records_cmd.register(app)
stats_cmd.register(app)
risk_cmd.register(app)
