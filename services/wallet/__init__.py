"""wallet: player and operator HTTP API; the ledger of every money movement."""
