"""The reference operator wallet as a real process (`croupier operator-wallet serve`, started
by `operator_wallet_process`), driven over HTTP with really signed requests: every refusal
named, idempotent replays, a rollback before its debit, kill -9 and restart on the same
database, each injected fault, two keys at once, and the report paged to its end.

No broker: the operator wallet is the operator's, not croupier's."""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import httpx
import pytest

from services.infra.processes import ServiceProcess, operator_wallet_process
from services.simulators.operator_wallet.client import OperatorWalletClient
from services.simulators.operator_wallet.server import DEV_SECRET
from shared.events.operator_wallet import (
    ERROR_CODES,
    KEY_ID_HEADER,
    SIGNATURE_HEADER,
    WalletRequest,
    WalletResponse,
)
from tests.ports import free_port

KEYS = {"k1": DEV_SECRET, "k2": "the-next-operator-wallet-secret"}


def start(tmp_path, name: str = "wallet", **kw) -> ServiceProcess:
    proc = operator_wallet_process(free_port(), tmp_path / f"{name}.sqlite",
                                   tmp_path / f"{name}.log", keys=KEYS, **kw)
    proc.start().wait_ready(30)
    return proc


@pytest.fixture(scope="module")
def wallet(tmp_path_factory):
    proc = start(tmp_path_factory.mktemp("operator-wallet"), rollback_unknown="success")
    yield proc
    proc.stop(10)
    assert proc.proc is not None and proc.proc.returncode == 0, proc.log_tail()


@pytest.fixture
def client(wallet):
    with OperatorWalletClient(wallet.base_url) as client:
        client.set_faults()
        yield client
        client.set_faults()


def player(client: OperatorWalletClient, balance: int = 1_000, currency: str = "EUR"
           ) -> tuple[str, str]:
    """A new player with a live session: (player_id, token)."""
    player_id = f"p-{uuid.uuid4().hex[:8]}"
    client.put_player(player_id, currency, balance)
    return player_id, client.issue_session(player_id)


def call(kind: str, player_id: str, amount: int, tx: str | None = None, *,
         token: str | None = None, ref: str | None = None, **kw) -> WalletRequest:
    bet = kw.pop("bet_id", "b1")
    return WalletRequest.model_validate({
        "transaction_id": tx or f"{kind}:{uuid.uuid4().hex[:10]}", "kind": kind,
        "player_id": player_id, "amount": amount, "currency": "EUR", "table_id": "t1",
        "round_id": "r1", "bet_id": bet, "session_token": token,
        "reference_transaction_id": ref, "requested_at": datetime.now(UTC), **kw})


def refused(client: OperatorWalletClient, request: WalletRequest, code: str) -> WalletResponse:
    status, answer = client.call(request)
    assert (status, answer.status, answer.error_code) == (ERROR_CODES[code], "error", code), \
        answer
    assert answer.message and answer.transaction_id == request.transaction_id
    return answer


def test_every_refusal_is_named(client):
    pid, token = player(client)
    refused(client, call("debit", "nobody", 1, token=token), "unknown_player")
    refused(client, call("debit", pid, 1), "invalid_session")
    refused(client, call("debit", pid, 1, token="forged"), "invalid_session")
    other, other_token = player(client)
    refused(client, call("debit", pid, 1, token=other_token), "invalid_session")
    refused(client, call("debit", pid, 1, token=token, currency="JPY"), "wrong_currency")
    refused(client, call("debit", pid, 1_001, token=token), "insufficient_funds")
    refused(client, call("credit", pid, 5, ref="debit:never"), "transaction_not_found")
    expired = client.issue_session(pid, ttl_seconds=-1)
    refused(client, call("debit", pid, 1, token=expired), "session_expired")
    client.expire_session(token)
    refused(client, call("debit", pid, 1, token=token), "session_expired")
    client.put_player(other, blocked=True)
    refused(client, call("debit", other, 1, token=other_token), "player_blocked")
    # a blocked player is still paid, and still given back what a rollback undoes
    assert client.call(call("credit", other, 7))[1].balance == 1_007
    assert client.balance(pid) == 1_000


def test_bad_bodies_and_bad_signatures_are_refused(client):
    pid, token = player(client)
    body = call("debit", pid, 1, token=token).body()
    for headers, why in [({}, "missing"), ({KEY_ID_HEADER: "k9", SIGNATURE_HEADER: "00"}, "k9"),
                         ({KEY_ID_HEADER: "k1", SIGNATURE_HEADER: "00" * 32}, "match")]:
        answer = client.http.post("/debit", content=body, headers=headers)
        assert answer.status_code == 401 and answer.json()["error_code"] == "bad_signature"
        assert why in answer.json()["message"]
    wrong_key = client.send(call("debit", pid, 1, token=token), key=b"not-the-secret")
    assert wrong_key.status_code == 401
    for raw, where in [(b"{not json", "body"), (b'{"kind": "debit"}', "transaction_id"),
                       (body.replace(b'"amount":1', b'"amount":1.5'), "amount")]:
        answer = client.http.post("/debit", content=raw, headers=signature_headers(raw))
        assert answer.status_code == 400 and answer.json()["error_code"] == "bad_request"
        assert where in answer.json()["message"]
    misplaced = client.send(call("credit", pid, 1), path="/debit")
    assert misplaced.status_code == 400 and "credit body posted to /debit" in misplaced.text
    assert client.balance(pid) == 1_000


def signature_headers(body: bytes) -> dict[str, str]:
    from shared.events.operator_wallet import signature_headers as signed

    return signed(body, "k1", DEV_SECRET.encode())


def test_two_keys_are_held_while_keys_rotate(client, wallet):
    pid, token = player(client)
    with OperatorWalletClient(wallet.base_url, key_id="k2", key=KEYS["k2"]) as rotated:
        assert rotated.call(call("debit", pid, 100, token=token))[0] == 200
        assert rotated.transactions(pid)[0].amount == 100
    assert client.call(call("debit", pid, 100, token=token))[0] == 200
    stale = client.send(call("debit", pid, 100, token=token), key_id="k2", key=KEYS["k1"].encode())
    assert stale.status_code == 401
    assert client.balance(pid) == 800


def test_replays_get_the_first_answer_and_another_body_a_conflict(client):
    pid, token = player(client)
    debit = call("debit", pid, 300, "debit:b1", token=token)
    first = client.call(debit)
    assert first[0] == 200 and first[1].balance == 700
    assert client.call(debit) == first
    assert client.call(debit.model_copy(update={"requested_at": datetime.now(UTC)}))[0] == 409
    refused(client, debit.model_copy(update={"amount": 301}), "transaction_conflict")
    short = call("debit", pid, 5_000, "debit:b2", token=token)
    again = refused(client, short, "insufficient_funds")
    client.put_player(pid, balance=10_000)
    assert client.call(short) == (402, again)  # a refusal is answered the same again too
    assert client.balance(pid) == 10_000
    assert [t.transaction_id for t in client.transactions(pid)] == ["debit:b1"]


def test_a_rollback_before_its_debit_refuses_the_late_debit(client):
    pid, token = player(client)
    late = call("debit", pid, 300, "debit:late", token=token)
    rollback = call("rollback", pid, 300, "rollback:debit:late", ref="debit:late")
    status, answer = client.call(rollback)
    assert (status, answer.status, answer.balance) == (200, "ok", 1_000)  # rollback_unknown=success
    refused(client, late, "transaction_rolled_back")
    refused(client, call("credit", pid, 600, ref="debit:late"), "transaction_not_found")
    assert client.balance(pid) == 1_000
    [tomb] = client.transactions(pid)
    assert (tomb.kind, tomb.amount, tomb.reference_transaction_id) == ("rollback", 0, "debit:late")
    # a credit whose rollback came first is refused the same way
    client.call(call("rollback", pid, 50, "rollback:credit:late", ref="credit:late"))
    refused(client, call("credit", pid, 50, "credit:late"), "transaction_rolled_back")
    assert client.balance(pid) == 1_000


def test_a_round_debit_credit_rollback(client):
    pid, token = player(client)
    client.call(call("debit", pid, 300, "debit:b1", token=token))
    assert client.call(call("credit", pid, 0, "credit:s1", ref="debit:b1",
                            round_closed=True))[1].balance == 700
    assert client.call(call("rollback", pid, 300, "rollback:debit:b1", ref="debit:b1"))[1] \
        .balance == 1_000
    refused(client, call("rollback", pid, 300, "rollback:again", ref="debit:b1"),
            "transaction_rolled_back")
    assert [(t.kind, t.amount, t.status) for t in client.transactions(pid)] == [
        ("debit", 300, "rolled_back"), ("credit", 0, "applied"), ("rollback", 300, "applied")]


def test_a_dropped_answer_is_applied_and_the_retry_gets_it(client):
    pid, token = player(client)
    debit = call("debit", pid, 250, token=token)
    client.set_faults(drop_rate=1.0)
    with pytest.raises(httpx.RemoteProtocolError):
        client.send(debit)
    client.set_faults()
    assert client.balance(pid) == 750
    status, answer = client.call(debit)
    [tx] = client.transactions(pid)
    assert (status, answer.balance, answer.operator_transaction_id) == \
        (200, 750, tx.operator_transaction_id)


def test_a_late_answer_is_applied_before_it_is_given(client, wallet):
    pid, token = player(client)
    debit = call("debit", pid, 100, token=token)
    client.set_faults(late_rate=1.0, late_ms=1_500, kinds=["debit"])
    with OperatorWalletClient(wallet.base_url, timeout=0.5) as impatient, \
            pytest.raises(httpx.ReadTimeout):
        impatient.send(debit)
    assert client.balance(pid) == 900  # written, its answer still on its way
    client.set_faults()
    assert client.call(debit)[1].balance == 900


def test_a_500_comes_before_the_write(client):
    pid, token = player(client)
    debit = call("debit", pid, 100, token=token)
    client.set_faults(error_rate=1.0)
    assert client.send(debit).status_code == 500
    assert client.balance(pid) == 1_000 and client.transactions(pid) == []
    client.set_faults()
    assert client.call(debit)[1].balance == 900


def test_duplicated_deliveries_move_money_once(client, wallet):
    pid, token = player(client)
    client.set_faults(duplicate_rate=1.0, seed=3)
    debits = [call("debit", pid, 10, token=token) for _ in range(20)]
    with ThreadPoolExecutor(4) as pool:  # and the same calls twice more, racing
        answers = list(pool.map(client.call, debits * 3))
    assert all(status == 200 for status, _ in answers)
    assert client.balance(pid) == 800
    assert len(client.transactions(pid)) == 20
    metrics = client.http.get("/metrics").text
    assert 'operator_wallet_calls_total{kind="debit",outcome="fault_duplicate"}' in metrics
    assert 'outcome="duplicate_mismatch"' not in metrics


def test_the_report_pages_through_every_transaction(client, wallet):
    pid, token = player(client, 100_000)
    expected = []
    for i in range(9):
        debit = call("debit", pid, 10 + i, f"debit:{i}", token=token)
        client.call(debit)
        expected.append(debit.transaction_id)
        if i % 3 == 0:
            client.call(call("rollback", pid, 10 + i, f"rollback:debit:{i}", ref=f"debit:{i}"))
            expected.append(f"rollback:debit:{i}")
    client.call(call("rollback", pid, 5, "rollback:debit:ghost", ref="debit:ghost"))
    expected.append("rollback:debit:ghost")
    assert [t.transaction_id for t in client.transactions(pid, page_size=4)] == expected
    pages = []
    after: int | None = 0
    while after is not None:
        page = client.transactions_page(after, 4, pid)
        pages.append(len(page.transactions))
        after = page.next_after
    assert sum(pages) == len(expected) and max(pages) == 4
    everyone = [t.transaction_id for t in client.transactions(page_size=7)]
    assert set(expected) <= set(everyone)
    unsigned = client.http.get("/transactions?after=0&limit=4")
    assert unsigned.status_code == 401 and unsigned.json()["error_code"] == "bad_signature"
    query = "after=0&limit=4"
    forged = client.http.get("/transactions?after=0&limit=400", headers=signature_headers(
        query.encode()))
    assert forged.status_code == 401
    bad = "after=x&limit=4"
    assert client.http.get(f"/transactions?{bad}", headers=signature_headers(
        bad.encode())).json()["error_code"] == "bad_request"


def test_admin_wants_its_token(wallet):
    answer = httpx.get(f"{wallet.base_url}/admin/faults")
    assert answer.status_code == 401
    with OperatorWalletClient(wallet.base_url) as client:
        bad = client.http.put("/admin/players/x", headers=client._admin, content=b'{"balance": 1.5}')
        assert bad.status_code == 400


def test_kill_9_mid_run_and_restart_keeps_everything(tmp_path):
    """Debits keep arriving while the process is killed; after the restart on the same
    database every call is asked again: each answered before the kill gets the same answer,
    and each moved money exactly once."""
    proc = start(tmp_path, rollback_unknown="not_found")
    try:
        with OperatorWalletClient(proc.base_url, timeout=2.0) as client:
            pid, token = player(client, 10_000)
            debits = [call("debit", pid, 1 + i % 7, f"debit:{i}", token=token) for i in range(300)]
            before: dict[str, WalletResponse] = {}
            killed = threading.Event()

            def send(request: WalletRequest) -> None:
                if killed.is_set():
                    return
                try:
                    status, answer = client.call(request)
                except httpx.HTTPError:
                    return
                assert status == 200
                before[request.transaction_id] = answer
                if len(before) == 120:
                    proc.kill()
                    killed.set()

            with ThreadPoolExecutor(6) as pool:
                list(pool.map(send, debits))
            assert killed.is_set() and len(before) >= 120
            proc.start().wait_ready(30)
            after = {r.transaction_id: client.call(r)[1] for r in debits}
            for tx, answer in before.items():
                assert after[tx] == answer
            assert client.balance(pid) == 10_000 - sum(r.amount for r in debits)
            txs = client.transactions(pid, page_size=100)
            assert sorted(t.transaction_id for t in txs) == sorted(r.transaction_id for r in debits)
            # the restarted process still has its tombstones and its setting
            refused(client, call("rollback", pid, 1, "rollback:debit:x", ref="debit:x"),
                    "transaction_not_found")
            refused(client, call("debit", pid, 1, "debit:x", token=token),
                    "transaction_rolled_back")
    finally:
        proc.kill()


def test_under_every_fault_at_once_money_moves_once(client, wallet):
    """500s, drops and late answers after the write, duplicates, with a seed: a caller that
    asks again until it has a definitive answer moves each transaction's money once, and
    its answers are the report's."""
    pid, token = player(client, 100_000)
    client.set_faults(error_rate=0.2, drop_rate=0.2, late_rate=0.2, late_ms=250,
                      duplicate_rate=0.3, seed=11)
    calls = []
    for i in range(30):
        calls.append(call("debit", pid, 100 + i, f"debit:f{i}", token=token))
        calls.append(call("credit", pid, 2 * (100 + i) if i % 2 else 0, f"credit:f{i}",
                          ref=f"debit:f{i}", round_closed=True))
    final: dict[str, WalletResponse] = {}
    deliveries = 0
    with OperatorWalletClient(wallet.base_url, timeout=0.1) as impatient:
        for request in calls:
            while request.transaction_id not in final:
                deliveries += 1
                try:
                    response = impatient.send(request)
                except httpx.HTTPError:
                    continue
                if response.status_code < 500:
                    assert response.status_code == 200, response.text
                    final[request.transaction_id] = WalletResponse.model_validate_json(
                        response.text)
    client.set_faults()
    assert deliveries > len(calls) * 1.3  # the faults did bite
    moved = sum(-r.amount if r.kind == "debit" else r.amount for r in calls)
    assert client.balance(pid) == 100_000 + moved
    report = client.transactions(pid)
    assert [t.transaction_id for t in report] == [r.transaction_id for r in calls]
    assert {t.transaction_id: t.operator_transaction_id for t in report} == \
        {tx: answer.operator_transaction_id for tx, answer in final.items()}
