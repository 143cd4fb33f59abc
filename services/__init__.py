"""The platform's four Kafka services, the operator's tools and the `croupier` CLI (`services.cli`)."""
