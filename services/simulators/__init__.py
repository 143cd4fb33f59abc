"""Stand-ins for the world outside the platform, for the demo, tests and benchmarks: dealers
at tables (`tables`: signed inputs on the table's procedure, with faults on demand) and
players (`players`: bets through the wallet's HTTP API)."""
