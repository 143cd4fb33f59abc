"""Who may do what on Kafka: principals, their credentials, the ACLs, and the one place
every client of ours gets its security options from.

Each service writes only its own topics (issue 11, item 3): a record on `table.events`
can only come from dealer-event, because the broker refuses a produce by anyone else.

- **Principals** (`User:<name>`): one per service (`dealer-event`, `game-evaluation`,
  `bet-settlement`, `wallet`), `table-device` (writes `dealer.inputs` only), `operator`
  (reads every topic: replay, rebuild, audit, the CLI's readers; writes only
  `operator.actions`, the record of each use of an override) and `admin`
  (a super user: applies topics and ACLs).
- **Credentials**: `CROUPIER_KAFKA_USERNAME` / `CROUPIER_KAFKA_PASSWORD` when set (an
  external cluster, a deployed service). Otherwise the principal the caller names, with a
  password derived from one local secret (`CROUPIER_KAFKA_LOCAL_SECRET`, or generated once
  into `<cache dir>/kafka-local-secret`): the local broker's users are created from the
  same secret at every start, so no password is ever written into the repo.
- **Client options**: `kafka_python_options`, `aiokafka_options` and `faust_credentials`
  are the only builders; every client of ours passes through one of them.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
import ssl
from pathlib import Path

from services.infra.service_table import SERVICE_NAMES
from shared.topics import DEAD_LETTERS_TOPIC, OPERATOR, TABLE_DEVICE, topic_catalogue

SERVICE_PRINCIPALS = SERVICE_NAMES  # services.infra.service_table
ADMIN = "admin"
PRINCIPALS = (*SERVICE_PRINCIPALS, TABLE_DEVICE, OPERATOR, ADMIN)
PROTOCOLS = ("PLAINTEXT", "SASL_PLAINTEXT", "SASL_SSL")
LOCAL_SECRET_FILE = "kafka-local-secret"

# topic -> the principals that may write it (the rule of issue 11, item 3), and the
# services that read it: both from the catalogue (`shared.topics`), the one place that says
# who writes and who reads each topic; the operator reads every topic besides
_CATALOGUE = topic_catalogue()
WRITERS: dict[str, tuple[str, ...]] = {spec.name: spec.writers for spec in _CATALOGUE}
READERS: dict[str, tuple[str, ...]] = {spec.name: spec.readers for spec in _CATALOGUE}
# shared cannot import the service table: its list of every service must be the table's
assert set(WRITERS[DEAD_LETTERS_TOPIC]) == set(SERVICE_PRINCIPALS), \
    "shared.topics' services are services.infra.service_table.SERVICE_NAMES"
assert {who for rights in (*WRITERS.values(), *READERS.values()) for who in rights} \
    <= set(PRINCIPALS), "the catalogue grants topics to known principals only"


class KafkaSecurityError(RuntimeError):
    """Security settings that cannot work (e.g. a protocol no client knows)."""


# ---------------------------------------------------------------- credentials

def local_secret(settings) -> str:
    """The one secret every local credential derives from: the setting, or a random one
    generated once per machine into the cache directory (mode 0600)."""
    if settings.kafka_local_secret:
        return settings.kafka_local_secret
    path = Path(settings.cache_dir) / LOCAL_SECRET_FILE
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    try:  # O_EXCL: two processes starting at once agree on the first one's secret
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text().strip()
    with os.fdopen(fd, "w") as out:
        out.write(secrets.token_hex(32) + "\n")
    return path.read_text().strip()


def derived_password(secret: str, principal: str) -> str:
    return hmac.new(secret.encode(), f"croupier-kafka:{principal}".encode(),
                    hashlib.sha256).hexdigest()


def local_credentials(settings) -> dict[str, str]:
    """Every principal's password, as the local broker is configured with."""
    secret = local_secret(settings)
    return {name: derived_password(secret, name) for name in PRINCIPALS}


def secured(settings) -> bool:
    return settings.kafka_security_protocol != "PLAINTEXT"


def credentials(principal: str, settings=None) -> tuple[str, str]:
    """(username, password) a client acting as `principal` uses: the explicit setting wins
    (a deployed process has exactly one identity); else `principal`, its password derived
    from the local secret."""
    settings = settings or _settings()
    username = settings.kafka_username or principal
    password = settings.kafka_password
    if password is None:
        password = derived_password(local_secret(settings), username)
    return username, password


def principal_env(principal: str, settings=None) -> dict[str, str]:
    """The environment of a process we start to act as `principal` (a service worker)."""
    settings = settings or _settings()
    env = {"CROUPIER_KAFKA_SECURITY_PROTOCOL": settings.kafka_security_protocol,
           "CROUPIER_KAFKA_SASL_MECHANISM": settings.kafka_sasl_mechanism}
    if settings.kafka_ssl_cafile:
        env["CROUPIER_KAFKA_SSL_CAFILE"] = str(settings.kafka_ssl_cafile)
    if secured(settings):
        if settings.kafka_username:   # one explicit identity: the children share it
            username, password = credentials(principal, settings)
        else:
            username, password = principal, derived_password(local_secret(settings), principal)
        env["CROUPIER_KAFKA_USERNAME"] = username
        env["CROUPIER_KAFKA_PASSWORD"] = password
    return env


# ---------------------------------------------------------------- client options

def _settings():
    from services.infra.settings import get_settings
    return get_settings()


def _ssl_context(settings) -> ssl.SSLContext | None:
    if settings.kafka_security_protocol != "SASL_SSL":
        return None
    return ssl.create_default_context(cafile=settings.kafka_ssl_cafile or None)


def kafka_python_options(principal: str, settings=None) -> dict:
    """Keyword arguments for kafka-python's KafkaConsumer / KafkaProducer / KafkaAdminClient."""
    settings = settings or _settings()
    protocol = settings.kafka_security_protocol
    if protocol not in PROTOCOLS:
        raise KafkaSecurityError(f"kafka_security_protocol {protocol!r}: one of {PROTOCOLS}")
    if protocol == "PLAINTEXT":
        return {"security_protocol": "PLAINTEXT"}
    if protocol == "SASL_PLAINTEXT":
        # kafka-python warns on every connection that PLAIN sends the password in the clear:
        # known and decided (loopback, or a private network; SASL_SSL elsewhere)
        logging.getLogger("kafka.net.sasl.plain").setLevel(logging.ERROR)
    username, password = credentials(principal, settings)
    options = {"security_protocol": protocol, "sasl_mechanism": settings.kafka_sasl_mechanism,
               "sasl_plain_username": username, "sasl_plain_password": password}
    if protocol == "SASL_SSL":
        options["ssl_context"] = _ssl_context(settings)
    return options


def aiokafka_options(principal: str, settings=None) -> dict:
    """Keyword arguments for aiokafka's clients (the same names as kafka-python's)."""
    return kafka_python_options(principal, settings)


def faust_credentials(principal: str, settings=None):
    """`broker_credentials` for a Faust app, or None on a PLAINTEXT cluster."""
    import faust

    settings = settings or _settings()
    if not secured(settings):
        return None
    username, password = credentials(principal, settings)
    return faust.SASLCredentials(username=username, password=password,
                                 mechanism=settings.kafka_sasl_mechanism,
                                 ssl_context=_ssl_context(settings))


# ---------------------------------------------------------------- ACLs

def acl_table(instance: str | None) -> list[tuple[str, str, str, str, str]]:
    """Every ACL the platform needs, as (principal, resource type, pattern type, resource
    name, operation) rows; all ALLOW. The catalogue topics' rows hold for any instance;
    `instance` adds that instance's: it prefixes the services' consumer groups and private
    topics (table changelogs, the wallet's command topic, Faust's leader topic:
    `<instance>-<service>-...`)."""
    rows: list[tuple[str, str, str, str, str]] = []
    for topic, writers in WRITERS.items():
        for who in writers:
            rows.append((who, "TOPIC", "LITERAL", topic, "WRITE"))
            rows.append((who, "TOPIC", "LITERAL", topic, "DESCRIBE"))
    for topic, readers in READERS.items():
        for who in (*readers, OPERATOR):
            rows.append((who, "TOPIC", "LITERAL", topic, "READ"))
            rows.append((who, "TOPIC", "LITERAL", topic, "DESCRIBE"))
    if instance is None:
        return list(dict.fromkeys(rows))
    for service in SERVICE_PRINCIPALS:
        own = f"{instance}-{service}"
        rows.append((service, "GROUP", "PREFIXED", own, "READ"))
        rows.append((service, "GROUP", "PREFIXED", own, "DESCRIBE"))
        for op in ("READ", "WRITE", "CREATE", "DESCRIBE", "DESCRIBE_CONFIGS"):
            rows.append((service, "TOPIC", "PREFIXED", own, op))
    # the operator audits the instance's private topics too (changelog sizes, records)
    rows.append((OPERATOR, "TOPIC", "PREFIXED", f"{instance}-", "READ"))
    rows.append((OPERATOR, "TOPIC", "PREFIXED", f"{instance}-", "DESCRIBE"))
    return list(dict.fromkeys(rows))


def _acl_objects(instance: str | None):
    from kafka.admin import (
        ACL,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ResourcePattern,
        ResourceType,
    )
    return [ACL(principal=f"User:{who}", host="*", operation=ACLOperation[op],
                permission_type=ACLPermissionType.ALLOW,
                resource_pattern=ResourcePattern(ResourceType[rtype], name,
                                                 ACLResourcePatternType[ptype]))
            for who, rtype, ptype, name, op in acl_table(instance)]


def apply_acls(admin, instance: str | None) -> int:
    """Create the platform's ACLs (creating an existing ACL changes nothing, so this is
    idempotent). Returns how many were sent; raises if the broker refused any."""
    acls = _acl_objects(instance)
    result = admin.create_acls(acls)
    if result["failed"]:
        raise KafkaSecurityError(f"the broker refused {len(result['failed'])} ACL(s): "
                                 f"{result['failed'][:3]}")
    return len(acls)


# ---------------------------------------------------------------- the local broker

def broker_security_properties(port: int, controller_port: int, passwords: dict[str, str]
                               ) -> dict[str, str]:
    """server.properties entries for a SASL/PLAIN broker with the StandardAuthorizer.
    Both listeners authenticate (the controller one only knows `admin`, which the broker
    itself uses to reach it)."""
    admin = passwords[ADMIN]
    users = " ".join(f'user_{name}="{pw}"' for name, pw in passwords.items())
    module = "org.apache.kafka.common.security.plain.PlainLoginModule required"
    return {
        "listeners": f"SASL_PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"SASL_PLAINTEXT://127.0.0.1:{port}",
        "inter.broker.listener.name": "SASL_PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:SASL_PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config":
            f'{module} username="admin" password="{admin}" {users};',
        "listener.name.controller.plain.sasl.jaas.config":
            f'{module} username="admin" password="{admin}" user_admin="{admin}";',
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found": "false",
        "super.users": f"User:{ADMIN}",
    }
