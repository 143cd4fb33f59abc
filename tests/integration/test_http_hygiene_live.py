"""Issue 11 findings 7 and 9 through the real HTTP doors: a request that is too big, nested
too deep, carries bytes that are not text, or names a number no one could mean is refused
with a named 4xx (never a 500, never written to a topic), and the services stay healthy."""

from __future__ import annotations

import httpx
import pytest
from kafka import KafkaConsumer, TopicPartition

from services.infra.kafka_security import OPERATOR as OPERATOR_PRINCIPAL
from services.infra.kafka_security import kafka_python_options
from shared.topics import DEALER_INPUTS_TOPIC
from tests.integration.money_support import OPERATOR, RUN
from tests.integration.tables_live_support import running_services

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module")
def doors(platform_kafka, tmp_path_factory):
    home = tmp_path_factory.mktemp("http-hygiene-home")
    with running_services(platform_kafka, home, ["dealer-event", "wallet"]) as procs:
        yield {name: httpx.Client(base_url=p.base_url, timeout=30) for name, p in procs.items()}


def _end_offsets(bootstrap: str, topic: str) -> dict:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                             **kafka_python_options(OPERATOR_PRINCIPAL))
    try:
        tps = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic)]
        return consumer.end_offsets(tps)
    finally:
        consumer.close()


def test_an_input_over_the_limit_is_refused_before_anything_is_written(doors, platform_kafka):
    before = _end_offsets(platform_kafka, DEALER_INPUTS_TOPIC)
    for _ in range(5):
        r = doors["dealer-event"].post("/inputs", content=b"x" * (17 * 1024))
        assert r.status_code == 413 and r.json()["reason_code"] == "body_too_large"
    chunked = doors["dealer-event"].post("/inputs", content=iter([b"y" * 10_000] * 3))
    assert chunked.status_code == 413
    assert _end_offsets(platform_kafka, DEALER_INPUTS_TOPIC) == before


@pytest.mark.parametrize("body", [b"[" * 8000 + b"]" * 8000, b'{"a":' * 2000 + b"1" + b"}" * 2000,
                                  b"\xff\xfe\x00 not text", b"", b"null", b"[]"])
def test_hostile_inputs_are_malformed_not_500(doors, body):
    r = doors["dealer-event"].post("/inputs", content=body)
    assert r.status_code == 400 and r.json()["reason_code"] == "malformed_input", r.text
    assert doors["dealer-event"].get("/health").status_code == 200


def test_the_wallet_refuses_hostile_requests_by_name(doors):
    wallet = doors["wallet"]
    player = f"hyg-{RUN}"
    assert wallet.post("/accounts", json={"player_id": player, "currency": "IDR"},
                       headers=OPERATOR).status_code == 201
    deposits = f"/accounts/{player}/deposits"
    huge = wallet.post(deposits, headers={**OPERATOR, "Content-Type": "application/json"},
                       content=b'{"request_id": "d1", "amount": 1' + b"0" * 309 + b"}")
    assert huge.status_code == 422 and huge.json()["error"]["code"] == "amount_too_large"
    assert wallet.post(deposits, headers={**OPERATOR, "Content-Type": "application/json"},
                       content=b'{"request_id": "d2", "amount": 1e309}').status_code == 422
    assert wallet.post(deposits, headers=OPERATOR,
                       content=b"[" * 50_000 + b"]" * 50_000).status_code == 400
    assert wallet.post(deposits, headers=OPERATOR,
                       json={"request_id": "d3", "amount": 10**15}).status_code == 201
    for header in (b"Bearer \xff\xfe", b"Bearer \xc3\x28"):
        r = wallet.get(f"/players/{player}/balance", headers={"Authorization": header})
        assert r.status_code == 401, r.text
    token = wallet.post(f"/players/{player}/token", headers=OPERATOR).json()["token"]
    for position in (b"true", b"1.0"):
        r = wallet.post(f"/players/{player}/bets",
                        headers={"Authorization": f"Bearer {token}",
                                 "Content-Type": "application/json"},
                        content=b'{"bet_id": "b1", "table_id": "T1", "round_id": "R1", '
                                b'"bet": "win", "position": ' + position + b', "stake": 1000}')
        assert r.status_code == 422 and "position" in r.text, r.text
    assert wallet.get("/health").status_code == 200


def test_an_account_that_does_not_exist_is_404_from_the_worker_that_holds_it(doors):
    """Finding 5: 404 only from the worker holding the partition (else 503, retry)."""
    r = doors["wallet"].get(f"/accounts/nobody-{RUN}", headers=OPERATOR)
    assert (r.status_code, r.json()["error"]["code"]) == (404, "unknown_account"), r.text
