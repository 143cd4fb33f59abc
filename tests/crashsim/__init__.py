"""A deterministic crash simulator (TigerBeetle's VOPR idea): a model of Kafka
(`kafka_model`) and the wallet on its own log driven through the real kernel
(`ledger_sim`), its invariants checked from the topics alone.
docs/decisions/crash-simulator.md says what it models and what it found, on the design
before the ledger (that driver is at commit 2d8ff8f) and on the ledger."""
