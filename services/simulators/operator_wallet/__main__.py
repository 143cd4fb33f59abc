"""`python -m croupier.services.simulators.operator_wallet serve ...`: the same command as
`croupier operator-wallet serve`."""

from croupier.services.cli.operator_wallet_cmd import operator_wallet_app

operator_wallet_app()
