"""The reference operator wallet: a stand-in for an operator's seamless wallet, the other
side of `shared.events.operator_wallet`, for the demo, the tests and reconciliation.

A standalone aiohttp process (not a Faust app) with its own SQLite database: players,
sessions, every transaction and every answer it gave, so a redelivered call is answered as
its first delivery was, across kill -9 and restarts. Faults are injected on demand (late
answers, 500s, connections dropped after the write, duplicated deliveries) with a seeded
random, so a failing run can be run again (docs/decisions/operator-wallet.md).

- `rules`: what a call does to a player (pure): accepted with a movement, or refused with
  a named code;
- `faults`: the fault settings and the seeded dice (pure);
- `store`: the SQLite database, one write transaction per call;
- `server`: the HTTP API (signed calls, the transactions report, the admin API, /metrics);
- `client`: a small client of the admin API, the signed calls and the report.

Run it with `croupier operator-wallet serve` (or `python -m services.cli operator-wallet
serve`): the command lives with the other commands in `services/cli`, so this package
imports nothing above it.
"""
