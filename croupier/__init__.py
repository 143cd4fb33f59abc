"""croupier: the settlement platform's installed package.

The import path says whose code it is: ``croupier.shared`` is the pure core (rules, money,
event contracts), ``croupier.services`` the four Kafka services and the operator's tools.
The code lives in the top-level ``shared/`` and ``services/`` folders; ``croupier/shared``
and ``croupier/services`` are links to them, so every tool (Python, pip, mypy, pytest)
sees one package without an import hook.
"""
