"""The wallet's door reads a request body once and says what was wrong with it: a body that
is not JSON (or JSON nested past any body of ours) is 400 `malformed_body`, a body that is
JSON but not the request is 422 naming the field, an id that is not an id is `bad_id`."""

import asyncio

import pytest

from services.wallet.api_models import PlaceBetRequest
from services.wallet.views import Problem, parse

GOOD = (b'{"bet_id": "b1", "table_id": "T1", "round_id": "r1", "bet": "player", '
        b'"stake": 1000}')


class _Request:
    def __init__(self, body: bytes) -> None:
        self.body = body

    async def read(self) -> bytes:
        return self.body


def _problem(body: bytes) -> tuple[int, str, str]:
    with pytest.raises(Problem) as raised:
        asyncio.run(parse(_Request(body), PlaceBetRequest))
    answer = raised.value.answer
    return answer.status, answer.body["error"]["code"], answer.body["error"]["message"]


def test_a_good_body_is_the_request():
    assert asyncio.run(parse(_Request(GOOD), PlaceBetRequest)).stake == 1000


@pytest.mark.parametrize("body", [b'{"bet_id": ', b"{bad", b"\xff", b"[" * 5000 + b"]" * 5000])
def test_a_body_that_is_not_json_is_400_malformed_body(body):
    status, code, message = _problem(body)
    assert (status, code) == (400, "malformed_body") and message.startswith("body is not JSON")


def test_json_that_is_not_the_request_is_422_naming_the_field():
    status, code, message = _problem(GOOD.replace(b"1000", b'"ten"'))
    assert (status, code) == (422, "malformed_body") and "stake" in message
    assert _problem(b"")[:2] == (422, "malformed_body")  # no body: not an object


def test_an_id_that_is_not_an_id_is_bad_id():
    assert _problem(GOOD.replace(b'"b1"', b'"a/b"'))[:2] == (422, "bad_id")
