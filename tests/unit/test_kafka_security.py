"""The principal/ACL table and the client options, without a broker (the broker's own
refusals: tests/integration/test_kafka_acls_live.py)."""

from __future__ import annotations

import stat

import pytest

from services.infra import kafka_security as ks
from services.infra.settings import Settings
from shared.topics import (
    BETS_DECISIONS_TOPIC,
    BETS_PLACED_TOPIC,
    BETS_SETTLED_TOPIC,
    DEAD_LETTERS_TOPIC,
    DEALER_INPUTS_TOPIC,
    DEALER_REJECTIONS_TOPIC,
    OPERATOR_ACTIONS_TOPIC,
    ROUND_RESULTS_TOPIC,
    TABLE_CORRECTIONS_TOPIC,
    TABLE_EVENTS_TOPIC,
    WALLET_ENDINGS_TOPIC,
    WALLET_LEDGER_SNAPSHOTS_TOPIC,
    WALLET_TRANSACTIONS_TOPIC,
    topic_catalogue,
)


def settings(tmp_path, **kw) -> Settings:
    return Settings(_env_file=None, cache_dir=tmp_path, **kw)


def rights(instance: str = "croupier") -> set[tuple[str, str, str, str, str]]:
    return set(ks.acl_table(instance))


def writers_of(topic: str) -> set[str]:
    return {who for who, rtype, ptype, name, op in rights()
            if (rtype, ptype, name, op) == ("TOPIC", "LITERAL", topic, "WRITE")}


def test_only_the_owner_writes_each_topic() -> None:
    assert writers_of(TABLE_EVENTS_TOPIC) == {"dealer-event"}
    assert writers_of(DEALER_REJECTIONS_TOPIC) == {"dealer-event"}
    assert writers_of(TABLE_CORRECTIONS_TOPIC) == {"dealer-event"}  # the index of corrections
    assert writers_of(ROUND_RESULTS_TOPIC) == {"game-evaluation"}
    assert writers_of(BETS_PLACED_TOPIC) == {"wallet"}
    assert writers_of(WALLET_TRANSACTIONS_TOPIC) == {"wallet"}
    assert writers_of(BETS_DECISIONS_TOPIC) == {"bet-settlement"}
    assert writers_of(BETS_SETTLED_TOPIC) == {"bet-settlement"}
    # devices; and dealer-event, which puts what POST /inputs receives on the topic
    assert writers_of(DEALER_INPUTS_TOPIC) == {"table-device", "dealer-event"}


def test_every_service_writes_its_dead_letters_and_reads_the_table() -> None:
    # the catalogue's list of services is the service table's (services.infra.service_table)
    assert writers_of(DEAD_LETTERS_TOPIC) == set(ks.SERVICE_PRINCIPALS)
    assert set(ks.READERS[TABLE_EVENTS_TOPIC]) == set(ks.SERVICE_PRINCIPALS)


def test_the_rights_are_the_catalogues() -> None:
    # one place says who writes and reads each topic: the ACLs are built from it
    for spec in topic_catalogue():
        assert writers_of(spec.name) == set(spec.writers), spec.name
        for reader in spec.readers:
            assert (reader, "TOPIC", "LITERAL", spec.name, "READ") in rights(), spec.name


def test_the_operator_and_devices_write_nothing_else() -> None:
    for who, rtype, _ptype, name, op in rights():
        if who == ks.OPERATOR:  # it records its overrides, and writes nothing else
            assert op in {"READ", "DESCRIBE"} or (rtype, name, op) == (
                "TOPIC", OPERATOR_ACTIONS_TOPIC, "WRITE"), (rtype, name, op)
        if who == ks.TABLE_DEVICE:
            assert (rtype, name) == ("TOPIC", DEALER_INPUTS_TOPIC) and op in {"WRITE", "DESCRIBE"}


def test_the_operator_reads_every_topic() -> None:
    for spec in topic_catalogue():
        assert (ks.OPERATOR, "TOPIC", "LITERAL", spec.name, "READ") in rights()


def test_a_service_owns_its_group_and_private_topics_by_prefix_only() -> None:
    table = rights("t42")
    for service in ks.SERVICE_PRINCIPALS:
        assert (service, "GROUP", "PREFIXED", f"t42-{service}", "READ") in table
        assert (service, "TOPIC", "PREFIXED", f"t42-{service}", "CREATE") in table
        assert (service, "TOPIC", "PREFIXED", f"t42-{service}", "WRITE") in table
    prefixed_writes = {(who, name) for who, rtype, ptype, name, op in table
                       if ptype == "PREFIXED" and op in {"WRITE", "CREATE"}}
    assert prefixed_writes == {(s, f"t42-{s}") for s in ks.SERVICE_PRINCIPALS}
    assert not any(who == ks.ADMIN for who, *_ in table)  # a super user needs none


def test_services_read_what_they_consume() -> None:
    table = rights()
    for service, topics in {
        "dealer-event": (DEALER_INPUTS_TOPIC, TABLE_EVENTS_TOPIC, DEALER_REJECTIONS_TOPIC),
        "game-evaluation": (TABLE_EVENTS_TOPIC,),
        "bet-settlement": (BETS_PLACED_TOPIC, TABLE_EVENTS_TOPIC, ROUND_RESULTS_TOPIC),
        "wallet": (WALLET_ENDINGS_TOPIC, TABLE_EVENTS_TOPIC, WALLET_LEDGER_SNAPSHOTS_TOPIC),
    }.items():
        for topic in topics:
            assert (service, "TOPIC", "LITERAL", topic, "READ") in table


def test_local_secret_is_generated_once_and_private(tmp_path) -> None:
    s = settings(tmp_path)
    first = ks.local_secret(s)
    assert ks.local_secret(s) == first and len(first) == 64
    mode = (tmp_path / ks.LOCAL_SECRET_FILE).stat().st_mode
    assert stat.S_IMODE(mode) == 0o600
    assert ks.local_secret(settings(tmp_path, kafka_local_secret="given")) == "given"


def test_each_principal_has_its_own_password(tmp_path) -> None:
    passwords = ks.local_credentials(settings(tmp_path))
    assert set(passwords) == set(ks.PRINCIPALS)
    assert len(set(passwords.values())) == len(ks.PRINCIPALS)


def test_client_options_for_each_library(tmp_path) -> None:
    s = settings(tmp_path)
    options = ks.kafka_python_options("wallet", s)
    assert options["security_protocol"] == "SASL_PLAINTEXT"
    assert options["sasl_mechanism"] == "PLAIN"
    assert options["sasl_plain_username"] == "wallet"
    assert options["sasl_plain_password"] == ks.local_credentials(s)["wallet"]
    assert ks.aiokafka_options("wallet", s) == options
    creds = ks.faust_credentials("wallet", s)
    assert (creds.username, creds.password) == ("wallet", options["sasl_plain_password"])
    assert creds.mechanism.value == "PLAIN" and creds.protocol.value == "SASL_PLAINTEXT"


def test_explicit_credentials_win_for_an_external_cluster(tmp_path) -> None:
    s = settings(tmp_path, kafka_security_protocol="SASL_SSL",
                 kafka_sasl_mechanism="SCRAM-SHA-256", kafka_username="svc-wallet",
                 kafka_password="pw")
    options = ks.kafka_python_options(ks.OPERATOR, s)
    assert options["sasl_plain_username"] == "svc-wallet"
    assert options["sasl_plain_password"] == "pw"
    assert options["sasl_mechanism"] == "SCRAM-SHA-256"
    assert options["ssl_context"] is not None
    creds = ks.faust_credentials("wallet", s)
    assert creds.protocol.value == "SASL_SSL" and creds.mechanism.value == "SCRAM-SHA-256"


def test_plaintext_means_no_credentials(tmp_path) -> None:
    s = settings(tmp_path, kafka_security_protocol="PLAINTEXT")
    assert ks.kafka_python_options("wallet", s) == {"security_protocol": "PLAINTEXT"}
    assert ks.faust_credentials("wallet", s) is None
    assert "CROUPIER_KAFKA_USERNAME" not in ks.principal_env("wallet", s)


def test_a_started_service_gets_its_own_principal(tmp_path) -> None:
    s = settings(tmp_path)
    env = ks.principal_env("bet-settlement", s)
    assert env["CROUPIER_KAFKA_USERNAME"] == "bet-settlement"
    assert env["CROUPIER_KAFKA_PASSWORD"] == ks.local_credentials(s)["bet-settlement"]


def test_unknown_protocol_is_refused(tmp_path) -> None:
    with pytest.raises(ValueError):
        settings(tmp_path, kafka_security_protocol="SSL_SOMETHING")


def test_the_local_broker_config_authenticates_and_authorises(tmp_path) -> None:
    from services.infra.local_broker import LocalBroker

    broker = LocalBroker(data_dir=tmp_path / "kafka", cache_dir=tmp_path, port=1, secured=True)
    props = dict(line.split("=", 1) for line in broker.server_properties().splitlines())
    assert props["listeners"].startswith("SASL_PLAINTEXT://127.0.0.1:1,CONTROLLER://")
    assert props["listener.security.protocol.map"] == \
        "CONTROLLER:SASL_PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT"
    assert props["authorizer.class.name"].endswith("StandardAuthorizer")
    assert props["allow.everyone.if.no.acl.found"] == "false"
    assert props["super.users"] == "User:admin"
    for principal in ks.PRINCIPALS:
        assert f'user_{principal}="' in props["listener.name.sasl_plaintext.plain.sasl.jaas.config"]
    plain = LocalBroker(data_dir=tmp_path / "k2", cache_dir=tmp_path, port=1, secured=False)
    assert "sasl" not in plain.server_properties()
    assert "authorizer" not in plain.server_properties()


def test_the_catalogue_rights_hold_without_an_instance() -> None:
    """`topics apply` without an instance still lets each owner write and the operator read
    the catalogue topics; the prefixed rights come with an instance."""
    table = set(ks.acl_table(None))
    assert {row for row in rights() if row[2] == "LITERAL"} == table
    assert not any(ptype == "PREFIXED" for _, _, ptype, _, _ in table)
