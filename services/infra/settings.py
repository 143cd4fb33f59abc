"""Process settings, read once from the environment (and an optional `.env`).

Everything an operator may change lives here, so services, tools and tests
agree on ports, paths and the Kafka cluster without passing flags around.
"""

from __future__ import annotations

from datetime import timedelta
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from shared.topics import DEFAULT_PARTITIONS, DEFAULT_RETENTION_MS

# The development defaults of the secrets: fine for a demo on one machine, refused in
# production (anyone who read this file could mint a player token or sign a card).
DEVELOPMENT_SECRETS = {
    "table_signing_secret": "croupier-dev-table-secret",
    "operator_token": "croupier-dev-operator-token",
    "player_token_secret": "croupier-dev-player-secret",
    "table_events_key": "croupier-dev-table-events-key",
}
# ... and the one only a seamless wallet uses (refused in production in that mode only)
DEVELOPMENT_OPERATOR_WALLET_SECRET = "croupier-dev-operator-wallet-secret"
KEY_ID_PATTERN = r"^[A-Za-z0-9_-]{1,32}$"


class InsecureSettings(SystemExit):
    """A service asked to start in production with a development secret."""


class InvalidSetting(SystemExit):
    """A service asked to start with a setting it refuses (the message names it)."""


NODE_PORT_STEP = 3  # local node n: every port of node 0 + 3n (listener, controller, metrics)
MIN_WALLET_STATE_WINDOW_HOURS = 24  # the dispute window: a round is corrected within 24 h


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="CROUPIER_", env_file=".env", extra="ignore", frozen=True,
        env_ignore_empty=True,  # an empty variable (compose's `${X:-}`) means the default
    )

    env: Literal["production", "development"] = Field(default="production", description=(
        "production refuses to start a service with a development default secret; the "
        "demo and the tests run in development."))

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
    kafka_brokers: int = Field(default=1, ge=1, le=9, description=(
        "How many Kafka nodes the cluster has: `croupier kafka up` starts that many local "
        "nodes (node n on kafka_port + 3n, its controller on kafka_controller_port + 3n, "
        "its metrics on kafka_metrics_port + 3n); with an external cluster, how many "
        "brokers it has. 1 for the demo and most tests; 3 to survive the loss of a node."))
    topic_replication_factor: int | None = Field(default=None, ge=1, description=(
        "Copies of every partition, the brokers' internal topics included. Unset: 3 when "
        "kafka_brokers is 3 or more, else 1. With 3 or more, every topic takes "
        "min.insync.replicas=2 (an acknowledged write is on two nodes) and `croupier "
        "topics apply` refuses a factor above the brokers that are up."))
    kafka_port: int = 19092
    kafka_controller_port: int = 19093
    kafka_heap: str = "1g"
    kafka_node_session_ms: int | None = Field(default=None, ge=1000, le=60_000, description=(
        "The local nodes' broker.session.timeout.ms: how long the controller waits for a "
        "node's heartbeat before it fences the node (a node killed -9 leads its partitions "
        "that long) and before a restarted node may register again; heartbeats go every "
        "sixth of it. Unset: Kafka's own (9 s, every 2 s). Tests that kill and restart "
        "nodes lower it."))
    topic_partitions: int = DEFAULT_PARTITIONS
    dealer_event_port: int = 8101
    game_evaluation_port: int = 8102
    bet_settlement_port: int = 8103
    wallet_port: int = 8104
    operator_api_port: int = Field(default=8105, description="Replay reports over HTTP, and "
                                   "the operator's web console at /console/.")
    wallet_url: str | None = Field(default=None, description="Where the operator API (its "
                                   "console) reaches the wallet; default http://127.0.0.1:"
                                   "<wallet_port>.")
    console_session_minutes: int = Field(default=480, ge=1, le=7 * 24 * 60, description=(
        "How long a console login lasts without use."))
    console_refresh_seconds: float = Field(default=2.0, ge=0.2, le=60, description=(
        "How often the console's floor is read again and pushed to open pages."))
    console_secure_cookie: bool = Field(default=False, description=(
        "Mark the console's session cookie Secure (set it when the console is served over "
        "HTTPS, as it must be anywhere but this machine's loopback)."))
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
        default=DEVELOPMENT_SECRETS["table_signing_secret"], min_length=1,
        description="Master secret; each table's device and supervisor keys derive from it.",
    )
    table_events_key: str = Field(
        default=DEVELOPMENT_SECRETS["table_events_key"], min_length=1, description=(
            "dealer-event authenticates every table event with an HMAC under this key; "
            "game-evaluation, bet-settlement, the wallet, replay and rebuild verify it."))
    table_events_accept_unsigned: bool = Field(default=False, description=(
        "Accept table events with no HMAC (written before events were authenticated): "
        "set it while such events are still to be consumed or replayed after the upgrade; "
        "an event with a wrong HMAC is refused either way."))
    operator_token: str = Field(default=DEVELOPMENT_SECRETS["operator_token"], min_length=1,
                                description="Operator credential for wallet admin routes.")
    player_token_secret: str = Field(default=DEVELOPMENT_SECRETS["player_token_secret"],
                                     min_length=1,
                                     description="Signs new player tokens (the current key).")
    player_token_key_id: str = Field(default="k1", pattern=KEY_ID_PATTERN, description=(
        "The current key's id, written into every token it signs."))
    player_token_previous_keys: dict[str, str] = Field(default_factory=dict, description=(
        "Older keys still accepted, by key id (JSON): rotate by making the current key a "
        "previous one and setting a new current key; nobody is logged out until their "
        "token expires or its key is dropped from here."))
    player_token_ttl_seconds: int = Field(default=12 * 3600, gt=0, description=(
        "How long a player token is valid after it is issued."))
    betting_window_seconds: int | None = Field(
        default=None, description="Override every profile's betting window (demo, tests).")
    retention_ms: int = DEFAULT_RETENTION_MS
    # tables
    input_max_age_seconds: float = Field(
        default=30.0, gt=0, le=600,
        description="Dealer inputs sent longer ago than this are refused as stale (at most 10 "
                    "minutes: a table keeps the ids of its last 5,000 inputs to refuse a "
                    "resend, services/dealer_event/state.py KEEP_INPUT_IDS).")
    input_max_ahead_seconds: float = Field(
        default=5.0, description="Dealer inputs dated further ahead than this are refused.")
    betting_timer_interval_seconds: float = Field(
        default=0.5, description="How often dealer-event closes overdue betting windows "
                                 "(and looks for rounds left hanging).")
    round_stall_seconds: float = Field(default=300.0, gt=0, description=(
        "A round in progress with no input for this long is stalled: a `round_stalled` "
        "significant event and the RoundStalled alert."))
    round_abandon_seconds: float = Field(default=3600.0, gt=0, description=(
        "A round in progress with no input for this long is voided by the platform "
        "(`round_abandoned`): every stake is returned and a later input for it is refused."))
    max_amount_minor_units: int = Field(default=10**15, gt=0, description=(
        "The largest deposit or withdrawal an operator may make, in minor units."))
    input_max_bytes: int = Field(default=16 * 1024, gt=0, description=(
        "POST /inputs refuses a larger body (413) before anything is written."))
    decision_wait_seconds: float = Field(
        default=10.0, description="How long POST /inputs waits for the decision before 202.")
    # operations
    lag_interval_seconds: float = Field(
        default=5.0, description="How often each service measures its consumer lag.")
    stall_seconds: float = Field(default=60.0, gt=0, description=(
        "/health answers 503 when records wait and no batch finished for this long."))

    # snapshots (services/infra/snapshots.py): a service's own log partitions, so that a
    # recovery on an empty disk folds only the log after the newest one
    snapshot_every_entries: int = Field(default=50_000, gt=0, description=(
        "A partition's snapshot is written once this many own-log records were folded "
        "since its last one (the wallet: `wallet.ledger.snapshots`)."))
    snapshot_every_seconds: float = Field(default=300.0, gt=0, description=(
        "... or once this long has passed since its last one, if anything was folded."))

    # disputes
    late_complaint_override: bool = Field(default=False, description=(
        "Seed 002: \"Keluhan apapun yang diajukan setelah periode waktu tersebut akan "
        "ditolak\": a complaint filed more than 24 hours after its round is refused. True "
        "lets an operator file one anyway, with a reason (`override`, `--override`); every "
        "use is written to `operator.actions` and listed in the significant-event log."))

    # the wallet
    wallet_state_window_hours: float = Field(default=720, description=(
        "How long the wallet keeps a bet's record, its movements' idempotency keys, the "
        "history and the spot totals after their last change (720: 30 days); accounts are "
        "kept forever. Below 24 (the dispute window) the wallet refuses to start "
        "(docs/decisions/wallet-window.md)."))

    # the seamless wallet (docs/decisions/seamless.md): the operator's wallet holds the
    # balance and croupier calls it (shared.events.operator_wallet)
    wallet_mode: Literal["transfer", "seamless"] = Field(default="transfer", description=(
        "transfer: the wallet holds every balance (deposits in, withdrawals out). seamless: "
        "the operator's wallet does; every bet is debited, every settlement credited and "
        "every undone bet rolled back there, over signed HTTP."))
    operator_wallet_url: str | None = Field(default=None, description=(
        "Seamless mode: the base URL of the operator's wallet API (POST <url>/debit, "
        "/credit, /rollback; GET <url>/transactions)."))
    operator_wallet_key_id: str = Field(default="k1", pattern=KEY_ID_PATTERN, description=(
        "Seamless mode: the id of the key requests are signed with (X-Croupier-Key-Id)."))
    operator_wallet_secret: str = Field(
        default=DEVELOPMENT_OPERATOR_WALLET_SECRET, min_length=1, repr=False,
        description="Seamless mode: the shared secret requests are signed with (HMAC-SHA256).")
    operator_wallet_debit_timeout_seconds: float = Field(default=3.0, gt=0, le=60, description=(
        "Seamless mode: a debit not answered within this is refused to the player and "
        "rolled back."))
    operator_wallet_call_timeout_seconds: float = Field(default=5.0, gt=0, le=120, description=(
        "Seamless mode: how long one delivery of a credit or rollback waits before it is "
        "tried again."))
    operator_wallet_retry_max_seconds: float = Field(default=30.0, gt=0, description=(
        "Seamless mode: the longest wait between two deliveries of a credit or rollback "
        "(the backoff doubles from 0.2 s up to this, until a definitive answer)."))
    operator_wallet_rollback_unknown: Literal["success", "not_found"] = Field(
        default="not_found", description=(
            "Seamless mode: what this operator answers for a rollback of a transaction it "
            "never recorded (a debit whose answer never came): a 200, or a 404 "
            "transaction_not_found. Either is taken as done; reconciliation expects it."))
    operator_wallet_zero_credits: bool = Field(default=True, description=(
        "Seamless mode: a lost bet closes its round with a credit of 0 (the operator's API "
        "expects one per bet); false: a lost bet makes no call."))

    archive_url: str | None = Field(default=None, description=(
        "Where the archive of every topic lives: file:///path (default <home>/archive) or "
        "s3://bucket/prefix?endpoint=host:port&scheme=http (services/infra/archive_store.py)."))
    archive_s3_access_key: str | None = Field(default=None, description=(
        "The S3 archive's access key (unset: the AWS SDK's own variables and files)."))
    archive_s3_secret_key: str | None = Field(default=None, repr=False, description=(
        "The S3 archive's secret key."))
    archive_flush_seconds: float = Field(default=300.0, gt=0, description=(
        "The archiver closes a partition's segment after this long (or 50,000 records)."))

    @model_validator(mode="after")
    def _stall_before_abandon(self) -> Settings:
        if self.round_abandon_seconds <= self.round_stall_seconds:
            raise ValueError(
                f"CROUPIER_ROUND_ABANDON_SECONDS ({self.round_abandon_seconds:g}) must be "
                f"more than CROUPIER_ROUND_STALL_SECONDS ({self.round_stall_seconds:g}): a "
                "round is first stalled, then abandoned")
        return self

    @property
    def archive_location(self) -> str:
        """The archive's URL: the one set, or the local directory under the home."""
        return self.archive_url or (self.home / "archive").resolve().as_uri()

    def wallet_state_window(self) -> timedelta:
        """The wallet's state window, or a refusal to start that names the setting."""
        hours = self.wallet_state_window_hours
        if not hours >= MIN_WALLET_STATE_WINDOW_HOURS:
            raise InvalidSetting(
                f"wallet refuses to start: CROUPIER_WALLET_STATE_WINDOW_HOURS={hours:g} is "
                f"below {MIN_WALLET_STATE_WINDOW_HOURS} hours. A bet's record must outlive "
                "the dispute window, in which a round may still be corrected or voided and "
                "its bets paid or taken back again; set 24 or more (default 720, 30 days).")
        return timedelta(hours=hours)

    @property
    def table_events_key_bytes(self) -> bytes:
        return self.table_events_key.encode("utf-8")

    @property
    def replication_factor(self) -> int:
        """The replication factor every topic of ours takes (see `durability`)."""
        if self.topic_replication_factor is not None:
            return self.topic_replication_factor
        return 3 if self.kafka_brokers >= 3 else 1

    @property
    def local_bootstrap(self) -> str:
        """Every local node's listener: a client reaches the cluster through any that is up."""
        return ",".join(f"127.0.0.1:{self.kafka_port + NODE_PORT_STEP * n}"
                        for n in range(self.kafka_brokers))

    @property
    def bootstrap_servers(self) -> str:
        """The cluster every client talks to: the external one if set, else the local broker."""
        return self.kafka_bootstrap_servers or self.local_bootstrap

    @property
    def uses_external_kafka(self) -> bool:
        return bool(self.kafka_bootstrap_servers)

    def development_secrets_in_use(self) -> list[str]:
        """The environment variables whose value is still a development default."""
        in_use = [name for name, default in DEVELOPMENT_SECRETS.items()
                  if getattr(self, name) == default]
        if self.wallet_mode == "seamless" and \
                self.operator_wallet_secret == DEVELOPMENT_OPERATOR_WALLET_SECRET:
            in_use.append("operator_wallet_secret")
        in_use += [f"player_token_previous_keys[{kid}]"
                   for kid, key in self.player_token_previous_keys.items()
                   if key in DEVELOPMENT_SECRETS.values()]
        return [f"CROUPIER_{name.upper()}" if "[" not in name else name for name in in_use]

    def require_production_secrets(self, service: str) -> None:
        """Refuse to start `service` in production with a development default secret."""
        if self.env != "production":
            return
        in_use = self.development_secrets_in_use()
        if in_use:
            raise InsecureSettings(
                f"{service} refuses to start: CROUPIER_ENV=production and "
                f"{', '.join(in_use)} still {'has its' if len(in_use) == 1 else 'have their'} "
                "development default. Set a secret of your own for each (or "
                "CROUPIER_ENV=development for a demo on this machine).")


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
