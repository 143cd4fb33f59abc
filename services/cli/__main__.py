"""`python -m croupier.services.cli` runs the same command as the `croupier` script."""

from croupier.services.cli.main import app

app()
