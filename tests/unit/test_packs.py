"""A routed topic's records are packed by partition: fewer records, the same facts, in the
same order on each partition, each pack where its records would have gone."""

import json

import pytest

from services.bet_settlement import round_book
from services.infra import packs
from services.infra.packs import pack_routed, pack_values, records_of
from services.wallet.commands import ending_commands
from shared.events.bet_events import BetSettled, EndingsPack
from shared.topics import BETS_SETTLED_TOPIC, WALLET_ENDINGS_TOPIC
from tests.unit.round_book_support import NOW, open_round, placed, result


@pytest.fixture
def settled_record() -> BetSettled:
    book, _ = round_book.on_bet(open_round(), placed("b1", stake=3000), NOW)
    _, out = round_book.on_result(book, result(), NOW)
    [settlement] = [r for _, _, r in out if isinstance(r, BetSettled)]
    return settlement


def _partition(topic: str, key: bytes) -> int:
    return int(key.decode().split("-")[1]) % 3  # player-<n>: partition n mod 3


def _record(n: int, i: int) -> tuple[str, bytes, bytes]:
    return WALLET_ENDINGS_TOPIC, f"player-{n}".encode(), json.dumps({"n": n, "i": i}).encode()


def test_each_partitions_records_become_one_pack_in_their_order_keyed_to_that_partition():
    records = [_record(n, i) for i, n in enumerate([1, 2, 4, 3, 7, 5, 1])]
    other = (BETS_SETTLED_TOPIC, b"T1", b'{"x":1}')
    out = pack_routed([other, *records], _partition)
    assert out[0] == other  # other topics as they were, in place
    got = [(k, [json.loads(r) for r in records_of(v)]) for t, k, v in out[1:]]
    assert all(t == WALLET_ENDINGS_TOPIC for t, _, _ in out[1:])
    assert len(got) == 3  # partitions 1, 2 and 0
    by_partition = {_partition("", k): [r["i"] for r in pack] for k, pack in got}
    assert by_partition == {1: [0, 2, 4, 6], 2: [1, 5], 0: [3]}
    assert packs.unpack(out[3][2]) is None  # a record alone is sent as itself
    for key, pack in got:  # every record's key goes where its pack's key goes
        assert all(_partition("", f"player-{r['n']}".encode()) == _partition("", key)
                   for r in pack)


def test_a_pack_is_split_past_its_bounds_and_the_order_is_kept(monkeypatch):
    monkeypatch.setattr(packs, "PACK_MAX_RECORDS", 3)
    out = pack_routed([_record(3, i) for i in range(8)], _partition)
    assert [[r["i"] for r in json.loads(v)["records"]] for _, _, v in out] == [
        [0, 1, 2], [3, 4, 5], [6, 7]]
    monkeypatch.setattr(packs, "PACK_MAX_RECORDS", 100)
    monkeypatch.setattr(packs, "PACK_MAX_BYTES", 80)  # two of these records
    out = pack_routed([_record(3, i) for i in range(4)], _partition)
    assert all(len(v) <= 80 for _, _, v in out) and len(out) == 2
    assert [r["i"] for _, _, v in out for r in json.loads(v)["records"]] == [0, 1, 2, 3]


def test_the_wallet_reads_a_pack_and_an_ending_alone_the_same(settled_record):
    alone = settled_record.model_dump_json().encode()
    packed = pack_values([alone, alone])
    assert EndingsPack.model_validate_json(packed).records == (settled_record,) * 2
    assert [c for _, c in ending_commands(packed)] == [c for _, c in ending_commands(alone)] * 2
