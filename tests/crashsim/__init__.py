"""A deterministic crash simulator (TigerBeetle's VOPR idea): a model of Kafka
(`kafka_model`), a driver of today's wallet on it (`old_wallet`), the invariants checked
from the topics alone (`invariants`) and the seeded schedule explorer (`explorer`).
docs/decisions/crash-simulator.md says what it models and what it found."""
