"""`python -m services.cli` runs the same command as the `croupier` script."""

from services.cli.main import main

main()
