"""Process settings, read once from the environment (and an optional `.env`).

Everything an operator may change lives here, so services, tools and tests
agree on ports, paths and the Kafka cluster without passing flags around.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from shared.topics import DEFAULT_PARTITIONS, DEFAULT_RETENTION_MS


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="CROUPIER_", env_file=".env", extra="ignore", frozen=True
    )

    kafka_bootstrap_servers: str | None = Field(
        default=None,
        validation_alias=AliasChoices("KAFKA_BOOTSTRAP_SERVERS", "CROUPIER_KAFKA_BOOTSTRAP_SERVERS"),
        description="An external cluster; when set, no local broker is ever started.",
    )
    home: Path = Field(default=Path("var"), description="Runtime state: broker data, logs, pids.")
    cache_dir: Path = Field(
        default=Path.home() / ".cache" / "croupier",
        description="Per-machine cache for the broker's jars (downloaded once).",
    )
    instance: str = Field(default="croupier", pattern=r"^[a-z0-9-]+$", description=(
        "Prefix of the services' consumer groups and private topics: two platforms on one "
        "cluster (say, test runs) must use different instances."))
    kafka_security_protocol: Literal["PLAINTEXT", "SASL_PLAINTEXT", "SASL_SSL"] = Field(
        default="SASL_PLAINTEXT", description=(
            "How every client talks to Kafka. The local broker authenticates (SASL/PLAIN) and "
            "authorises (ACLs) unless this is PLAINTEXT; an external cluster takes its own."))
    kafka_sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] = Field(
        default="PLAIN", description="SASL mechanism (the local broker offers PLAIN).")
    kafka_username: str | None = Field(default=None, description=(
        "This process's Kafka principal. Unset: each client acts as the principal its role "
        "needs (a service its own, tools `operator`, topic admin `admin`), with a password "
        "derived from `kafka_local_secret`."))
    kafka_password: str | None = Field(default=None, repr=False, description=(
        "Password of `kafka_username`; unset: derived from `kafka_local_secret`."))
    kafka_ssl_cafile: str | None = Field(default=None, description=(
        "CA bundle for SASL_SSL (default: the system's)."))
    kafka_local_secret: str | None = Field(default=None, repr=False, description=(
        "The secret every local principal's password derives from; unset: generated once "
        "into `<cache_dir>/kafka-local-secret`."))
    kafka_manage_acls: bool = Field(default=True, description=(
        "`croupier topics apply` (and the demo, and the local broker at start) also applies "
        "the platform's ACLs as the admin principal; false where the cluster's own admins "
        "manage them."))
    kafka_port: int = 19092
    kafka_controller_port: int = 19093
    kafka_heap: str = "1g"
    topic_partitions: int = DEFAULT_PARTITIONS
    dealer_event_port: int = 8101
    game_evaluation_port: int = 8102
    bet_settlement_port: int = 8103
    wallet_port: int = 8104
    operator_api_port: int = Field(default=8105, description="Replay reports over HTTP.")
    web_bind: str = Field(default="127.0.0.1", description="Address the services' HTTP servers "
                          "bind; 0.0.0.0 in containers so Prometheus can scrape them.")
    web_host: str = Field(default="127.0.0.1", description="Address the other workers of a "
                          "service reach this worker's HTTP server at (its container name in "
                          "compose): requests for a key another worker owns are forwarded there.")
    worker_id: int = Field(default=0, ge=0, description=(
        "Which worker of its service this process is (0, 1, ...): its own store directory "
        "and, unless `web_port` is set, the service port + 100 * worker_id."))
    web_port: int | None = Field(default=None, description="This worker's HTTP port; "
                                 "default: the service's port + 100 * worker_id.")
    kafka_metrics_port: int = Field(default=19094, description="The local broker's Prometheus "
                                    "endpoint (JMX exporter agent).")
    table_signing_secret: str = Field(
        default="croupier-dev-table-secret",
        description="Master secret; each table's device and supervisor keys derive from it.",
    )
    operator_token: str = Field(default="croupier-dev-operator-token",
                                description="Operator credential for wallet admin routes.")
    player_token_secret: str = Field(default="croupier-dev-player-secret",
                                     description="Signs players' bearer tokens.")
    betting_window_seconds: int | None = Field(
        default=None, description="Override every profile's betting window (demo, tests).")
    retention_ms: int = DEFAULT_RETENTION_MS
    # tables
    input_max_age_seconds: float = Field(
        default=30.0, description="Dealer inputs sent longer ago than this are refused as stale.")
    input_max_ahead_seconds: float = Field(
        default=5.0, description="Dealer inputs dated further ahead than this are refused.")
    betting_timer_interval_seconds: float = Field(
        default=0.5, description="How often dealer-event closes overdue betting windows.")
    decision_wait_seconds: float = Field(
        default=10.0, description="How long POST /inputs waits for the decision before 202.")
    # operations
    lag_interval_seconds: float = Field(
        default=5.0, description="How often each service measures its consumer lag.")

    @property
    def local_bootstrap(self) -> str:
        return f"127.0.0.1:{self.kafka_port}"

    @property
    def bootstrap_servers(self) -> str:
        """The cluster every client talks to: the external one if set, else the local broker."""
        return self.kafka_bootstrap_servers or self.local_bootstrap

    @property
    def uses_external_kafka(self) -> bool:
        return bool(self.kafka_bootstrap_servers)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
