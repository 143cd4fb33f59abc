"""`python -m services.simulators.operator_wallet serve ...`: the same command as
`croupier operator-wallet serve`."""

from services.cli.operator_wallet_cmd import operator_wallet_app

operator_wallet_app()
