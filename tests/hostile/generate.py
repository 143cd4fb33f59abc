"""Generate the hostile-input corpus (issue 11, deliverable 8): `http.jsonl` and
`records/<topic>.jsonl` beside this file. Deterministic: re-run to regenerate, commit the
files. `tests/integration/test_hostile_corpus_live.py` replays them against a platform.

    python -m tests.hostile.generate

Every case names what it covers (`covers`: an issue 11 finding, or a risk).

HTTP cases: `service` (dealer-event, wallet, operator-api), `method`, `path` (a template),
`headers` ([name, value as base64]: raw bytes allowed), `body_b64`, `expect` ("4xx", "2xx",
or "2xx|4xx"; never a 5xx, never a hang; a 4xx must name its problem). Templates, filled
in by the suite: `{{PLAYER}}` / `{{OTHER}}` (two funded accounts), `{{PLAYER_TOKEN}}`,
`{{OTHER_TOKEN}}`, `{{OPERATOR}}` (the operator token), `{{TABLE}}` (a live table with an
open round `{{ROUND}}`). `sign` (device or supervisor): the body is a dealer input
template the suite signs with the table's key at run time (`sent_at` now), after the
templates are filled.

Record cases: `topic` (`{{COMMANDS}}`: the wallet's private commands topic), `key_b64`
(null: no key), `value_b64` (null: no value), and `handled`: per consuming service, what
"handled" may mean for this record:
- `dead_letter`: on `dead.letters` from that service, by source topic, partition, offset;
- `refused`: refused as an input with a reason (dealer.inputs: a `dealer.rejections`
  record for it; bets.placed: a `bet_rejected` decision for its bet id);
- `ignored`: consumed with no effect on anyone's money or table (a duplicate, an ending
  for a bet nobody placed, an event for a table nobody plays): the suite checks the
  consumer moved past it and every invariant of the normal round still holds.
A case with several outcomes is one the platform may legitimately treat either way
(e.g. a schema-valid forged table event: ignored today, dead-lettered once table events
carry an HMAC).
"""
from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from services.infra.table_keys import table_key
from shared.cards import parse_card
from shared.events.bet_events import (
    BetAccepted,
    BetPlaced,
    BetRejected,
    BetSettled,
    IntakeMark,
    RoundManifest,
    SettlementReversed,
)
from shared.events.canonical import GENESIS_HASH
from shared.events.inputs import (
    CloseBetting,
    NewShoe,
    OpenRound,
    ScanCard,
    VoidRound,
    make_input,
)
from shared.events.results import RoundResultPublished
from shared.events.table import (
    BettingClosed,
    CardDealt,
    RoundCompleted,
    RoundOpened,
    RoundVoided,
    ShoeStarted,
    seal,
)
from shared.profile import load_profile
from shared.rounds import evaluate_round
from shared.topics import (
    BETS_DECISIONS_TOPIC,
    BETS_PLACED_TOPIC,
    BETS_SETTLED_TOPIC,
    DEALER_INPUTS_TOPIC,
    ROUND_RESULTS_TOPIC,
    TABLE_EVENTS_TOPIC,
)
from tests.hostile.gen_common import COMMANDS, DEAD, DEV, HERE, HUGE, T0, b64, big, js, rng
from tests.hostile.generate_http import http_cases

# ------------------------------------------------------------------------------- records

class Records:
    def __init__(self, topic: str, name: str) -> None:
        self.topic, self.name, self.cases = topic, name, []

    def add(self, case: str, covers: str, key: bytes | None, value: bytes | None,
            handled: dict[str, list[str]], value_gen: dict | None = None, **ref) -> None:
        self.cases.append({"id": f"{self.name}/{len(self.cases):03d}-{case}", "covers": covers,
                           "topic": self.topic, "key_b64": b64(key), "value_b64": b64(value),
                           "value_gen": value_gen, "handled": handled, "ref": ref})


def garbage(r: Records, key: bytes, handled: dict[str, list[str]], sample: bytes) -> None:
    """What every topic gets: bytes no consumer can read (`sample`: a valid record of the
    topic, cut and bit-flipped)."""
    values = {
        "seventeen-bytes": b"\x00\x01 seventeen bytes", "empty": b"", "json-null": b"null",
        "json-list": b"[]", "json-number": b"42", "json-string": b'"table"',
        "invalid-utf8": b"\xff\xfe\xfd", "truncated": b'{"type": "', "nan": b'{"type": NaN}',
        "bom": b"\xef\xbb\xbf{}", "nul": b"\x00" * 100, "unknown-type": js({"type": "evil"}),
        "no-type": js({"schema_version": 1}), "schema-v2": js({"schema_version": 2}),
        "bom-sample": b"\xef\xbb\xbf" + sample, "sample-twice": sample + sample,
        "sample-in-list": b"[" + sample + b"]", "sample-latin1": sample.replace(b'"', b"\xab"),
    }
    for i in range(12):
        values[f"random-{i}"] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400)))
    for i, cut in enumerate(sorted({1, 2, 5, 10, 20, 50, 100, len(sample) // 2,
                                    len(sample) - 2, len(sample) - 1})):
        values[f"cut-{i}"] = sample[:cut]
    for i in range(12):
        flipped = bytearray(sample)
        flipped[rng.randrange(len(sample))] ^= 0x80
        values[f"bitflip-{i}"] = bytes(flipped)
    for name, value in values.items():
        r.add(name, "findings 1/2/4: unreadable bytes are dead-lettered, the consumer moves "
              "on", key, value, handled)
    for name, gen in {
            "deep-array": big(b"", b"[", 100_000, b"]" * 100_000),  # finding 1
            "deep-object": big(b"", b'{"a":', 20_000, b"1" + b"}" * 20_000),
            "huge-string": big(b'{"type":"x","pad":"', b"p", HUGE, b'"}'),
            "huge-array": big(b"[", b"0,", HUGE // 2, b"0]")}.items():
        r.add(name, "findings 1/9: deep nesting or a huge value under 1 MB is dead-lettered "
              "(digest kept), never a hang", key, None, handled, value_gen=gen)
    r.add("no-value", "a record with no value (tombstone) is dead-lettered", key, None, handled)


def mutate(r: Records, base: dict, key: bytes, handled: dict[str, list[str]],
           fields: dict[str, list], name: str) -> None:
    """Wrong types and impossible values, field by field, on a schema-valid record. Some
    are still readable (pydantic's lax mode takes "1" for 1, a missing field may have a
    default, ".." passes today's id pattern): `handled` lets each be dead-lettered,
    refused, or consumed with no effect, but never stop or crash a consumer."""
    for field, values in fields.items():
        for i, value in enumerate(values):
            r.add(f"{name}-{field}-{i}", f"wrong type / impossible {field}", key,
                  js(dict(base, **{field: value})), handled)
    for field in list(base)[:12]:
        if field in ("type",):
            continue
        r.add(f"{name}-missing-{field}", f"missing field {field}", key,
              js({k: v for k, v in base.items() if k != field}), handled)
    r.add(f"{name}-unknown-field", "unknown field", key, js(dict(base, evil=True)), handled)


def dealer_inputs() -> Records:
    r = Records(DEALER_INPUTS_TOPIC, DEALER_INPUTS_TOPIC)
    handled = {"dealer-event": ["dead_letter", "refused"]}
    secret = DEV.table_signing_secret

    def inp(cls, table, role="device", **fields):
        return make_input(cls, key=table_key(secret, table, role), sent_at=T0, table_id=table,
                          role=role, signer=f"{role}-1", **fields)

    t = "hx-di-t1"
    base = json.loads(inp(ScanCard, t, input_id="hx-di-base", round_id="hx-r1",
                          card="9S").model_dump_json())
    garbage(r, b"hx-di", handled, js(base))
    mutate(r, base, t.encode(), handled, {
        "table_id": [None, 1, True, "", "..", "a/b", "a\nb", "x" * 65],
        "input_id": [None, 7, "", "x" * 200], "card": ["ZZ", 9, None, "AS" * 50],
        "role": ["root", None], "command": ["rm_rf", None], "sent_at": ["0001-01-01", 0],
        "schema_version": [2, "1"], "signature": [None, 5]}, "scan")
    # signed and schema-valid, but impossible
    refused = {"dealer-event": ["refused", "dead_letter"]}
    for i in range(5):
        tab = f"hx-di-noshoe-{i}"
        r.add(f"open-no-shoe-{i}", "a round opened at a table with no shoe: refused",
              tab.encode(), inp(OpenRound, tab, input_id=f"hx-di-o{i}", round_id=f"hx-r{i}",
                                dealer="Eve").model_dump_json().encode(), refused,
              input_id=f"hx-di-o{i}")
        r.add(f"scan-no-round-{i}", "a card for a round that never was: refused", tab.encode(),
              inp(ScanCard, tab, input_id=f"hx-di-s{i}", round_id="hx-never",
                  card="5C").model_dump_json().encode(), refused, input_id=f"hx-di-s{i}")
        r.add(f"close-no-round-{i}", "closing a round that never was: refused", tab.encode(),
              inp(CloseBetting, tab, input_id=f"hx-di-c{i}",
                  round_id="hx-never").model_dump_json().encode(), refused,
              input_id=f"hx-di-c{i}")
    for i, profile in enumerate(["no-such-profile", "../../etc/passwd", "", "x" * 500]):
        tab = f"hx-di-prof-{i}"
        r.add(f"new-shoe-bad-profile-{i}", "finding 4: an unknown profile is refused, not a "
              "crash", tab.encode(), inp(NewShoe, tab, role="supervisor", input_id=f"hx-di-p{i}",
                                         shoe_id=f"hx-s{i}", profile=profile
                                         ).model_dump_json().encode(), refused,
              input_id=f"hx-di-p{i}")
    forged = inp(ScanCard, "hx-di-t2", input_id="hx-di-forged", round_id="hx-r1", card="7C")
    forged = forged.model_copy(update={"signature": "ab" * 32})
    r.add("forged-signature", "finding 3/8: an input with a forged signature is refused",
          b"hx-di-t2", forged.model_dump_json().encode(), refused, input_id="hx-di-forged")
    wrong_role = inp(VoidRound, "hx-di-t3", input_id="hx-di-vr", round_id="hx-r1",
                     reason_code="misdeal", reason_text="device void")
    r.add("device-void", "a device may not void a round", b"hx-di-t3",
          wrong_role.model_dump_json().encode(), refused, input_id="hx-di-vr")
    shoe = inp(NewShoe, "hx-di-t4", role="supervisor", input_id="hx-di-ns4", shoe_id="hx-s4",
               profile="sbo-baccarat").model_dump_json().encode()
    r.add("wrong-key", "a record keyed by another table than it names: refused or "
          "dead-lettered, never applied to either", b"hx-di-other", shoe, refused,
          input_id="hx-di-ns4")
    r.add("no-key", "a record with no key", None, shoe.replace(b"hx-di-ns4", b"hx-di-nk"),
          {"dealer-event": ["refused", "dead_letter", "ignored"]})
    dup = inp(ScanCard, "hx-di-t5", input_id="hx-di-dup", round_id="hx-never",
              card="2H").model_dump_json().encode()
    for i in range(3):
        r.add(f"duplicate-{i}", "a duplicated input is decided once (same answer again)",
              b"hx-di-t5", dup, {"dealer-event": ["refused", "ignored"]}, input_id="hx-di-dup")
    return r


def chain(table: str, *steps):
    """Sealed events of a table's chain from genesis; steps: (type, fields)."""
    prev, out = GENESIS_HASH, []
    for seq, (cls, fields) in enumerate(steps, start=1):
        event = seal(cls, table_id=table, seq=seq, prev_hash=prev,
                     occurred_at=T0 + timedelta(seconds=seq), **fields)
        prev = event.hash
        out.append(event)
    return out


def table_events() -> Records:
    r = Records(TABLE_EVENTS_TOPIC, TABLE_EVENTS_TOPIC)
    dead = {"game-evaluation": DEAD, "bet-settlement": DEAD}
    forged = {"game-evaluation": ["ignored", "dead_letter"],
              "bet-settlement": ["ignored", "dead_letter"]}
    opened = dict(shoe_id="hx-s1", round_id="hx-te-r1", round_number=1, dealer="Eve",
                  profile="sbo-baccarat", betting_closes_at=T0 + timedelta(seconds=30))
    ev = chain("hx-te-t1", (RoundOpened, opened))[0]
    base = json.loads(ev.model_dump_json())
    garbage(r, b"hx-te", dead, js(base))
    mutate(r, base, b"hx-te-t1", forged, {
        "seq": [0, -1, "1", 1.5, None, 10**30], "prev_hash": ["", "x", None, 5],
        "hash": ["", None, "0" * 63], "table_id": ["", None, "a/b", ".."],
        "round_number": [0, "x", None], "occurred_at": ["0001", None, 5],
        "betting_closes_at": ["never", None], "dealer": ["", "x" * 65, None]}, "opened")
    for i in range(6):
        tab = f"hx-te-noshoe-{i}"
        ev = chain(tab, (RoundOpened, dict(opened, round_id=f"hx-te-r{i}")))[0]
        r.add(f"round-opened-no-shoe-{i}", "finding 2: a schema-valid round_opened for a "
              "table with no shoe: no crash, at most its own table out of play", tab.encode(),
              ev.model_dump_json().encode(), forged)
    for i in range(4):
        tab = f"hx-te-prof-{i}"
        evs = chain(tab, (ShoeStarted, dict(shoe_id="hx-s1", profile="no-such-profile",
                                            decks=8)),
                    (RoundOpened, dict(opened, profile="no-such-profile")))
        for e in evs:
            r.add(f"unknown-profile-{i}-{e.seq}", "finding 4: a round_opened with an unknown "
                  "profile does not crash game-evaluation", tab.encode(),
                  e.model_dump_json().encode(), forged)
    # a forged chain continuation: seq 7 with a made-up prev hash (finding 3)
    for i, card in enumerate(["7C", "5C", "AS"]):
        tab = f"hx-te-t1-{i}"
        ev = seal(CardDealt, table_id=tab, seq=7, prev_hash="a" * 64, occurred_at=T0,
                  round_id="hx-te-r1", card=card, shoe_position=7, round_position=3)
        r.add(f"forged-card-{i}", "finding 3: a forged card_dealt out of chain is never acted "
              "on", tab.encode(), ev.model_dump_json().encode(), forged)
    tampered = chain("hx-te-tamper", (ShoeStarted, dict(shoe_id="hx-s1", profile="sbo-baccarat",
                                                        decks=8)))[0]
    bad_hash = json.loads(tampered.model_dump_json())
    bad_hash["decks"] = 6  # hash no longer matches
    r.add("tampered-hash", "finding 3: an event whose hash does not match its content",
          b"hx-te-tamper", js(bad_hash), forged)
    full = chain("hx-te-full",
                 (ShoeStarted, dict(shoe_id="hx-s1", profile="sbo-baccarat", decks=8)),
                 (RoundOpened, opened),
                 (BettingClosed, dict(round_id="hx-te-r1", reason="dealer")),
                 (RoundCompleted, dict(round_id="hx-te-r1", cards=tuple(
                     parse_card(c) for c in ("AS", "3H", "2D", "3C", "9S")))),
                 (RoundVoided, dict(round_id="hx-te-r1", reason_code="misdeal",
                                    reason_text="after completion", supervisor="Sam")))
    for e in full:
        r.add(f"forged-table-{e.seq}", "finding 3: a whole forged table (complete then void): "
              "never settled on", b"hx-te-full", e.model_dump_json().encode(), forged)
    for i in range(3):
        r.add(f"duplicate-{i}", "a duplicated event is applied once", b"hx-te-full",
              full[1].model_dump_json().encode(), forged)
    r.add("wrong-key", "an event keyed by another table than it names", b"hx-te-elsewhere",
          full[0].model_dump_json().encode().replace(b"hx-te-full", b"hx-te-wk"), forged)
    r.add("no-key", "an event with no key", None,
          full[0].model_dump_json().encode().replace(b"hx-te-full", b"hx-te-nk"), forged)
    return r


def result_record(table: str, round_id: str, profile: str = "sbo-baccarat",
                  cards=("AS", "3H", "2D", "3C", "9S")) -> dict:
    prof = load_profile("sbo-baccarat")
    cards = tuple(parse_card(c) for c in cards)
    res = RoundResultPublished(result_id=f"{table}:{round_id}", table_id=table,
                               round_id=round_id, shoe_id="hx-s1", profile="sbo-baccarat",
                               dealer="Eve", cards=cards, completed_seq=5,
                               completed_hash="c" * 64, occurred_at=T0,
                               result=evaluate_round(prof, list(cards)))
    data = json.loads(res.model_dump_json())
    data["profile"] = profile
    return data


def round_results() -> Records:
    r = Records(ROUND_RESULTS_TOPIC, ROUND_RESULTS_TOPIC)
    dead = {"bet-settlement": DEAD}
    maybe = {"bet-settlement": ["dead_letter", "ignored"]}
    base = result_record("hx-rr-t1", "hx-rr-r1")
    garbage(r, b"hx-rr", dead, js(base))
    mutate(r, base, b"hx-rr-t1", maybe, {
        "cards": [[], ["ZZ"], None, "AS", ["AS"] * 500], "completed_seq": ["x", None],
        "occurred_at": ["0001", None], "result": [None, {}, "banker", []],
        "table_id": [None, 5], "round_id": [None, 5]}, "result")
    for i, profile in enumerate(["no-such-profile", "../../x", "", "x" * 300, "SBO-BACCARAT"]):
        r.add(f"unknown-profile-{i}", "finding 4: a schema-valid result with an unknown "
              "profile is dead-lettered, settlement goes on", f"hx-rr-p{i}".encode(),
              js(result_record(f"hx-rr-p{i}", "hx-r1", profile)), maybe)
    for i in range(8):
        r.add(f"never-was-{i}", "a result for a round that never was: no bets, no money",
              f"hx-rr-n{i}".encode(), js(result_record(f"hx-rr-n{i}", f"hx-never-{i}")), maybe)
    wrong = result_record("hx-rr-w", "hx-r1")
    wrong["cards"] = ["AS", "3H"]
    r.add("impossible-cards", "a result whose cards cannot make a round", b"hx-rr-w",
          js(wrong), maybe)
    for i in range(3):
        r.add(f"duplicate-{i}", "a duplicated result is applied once", b"hx-rr-n0",
              js(result_record("hx-rr-n0", "hx-never-0")), maybe)
    r.add("wrong-key", "a result keyed by another table", b"hx-rr-elsewhere",
          js(result_record("hx-rr-wk", "hx-r1")), maybe)
    r.add("no-key", "a result with no key", None, js(result_record("hx-rr-nk", "hx-r1")), maybe)
    return r


def bet_fields(i: int, table: str = "hx-bp-t1", **over) -> dict:
    return {**dict(bet_id=f"hx-bp-b{i}", player_id="hx-bp-p1", table_id=table,
                   round_id="hx-r1", bet="banker", stake=1000, currency="IDR"), **over}


def bets_placed() -> Records:
    r = Records(BETS_PLACED_TOPIC, BETS_PLACED_TOPIC)
    dead = {"bet-settlement": DEAD}
    may = {"bet-settlement": ["dead_letter", "refused", "ignored"]}
    base = json.loads(BetPlaced(**bet_fields(0), debit_tx_id="stake_debit:hx-bp-b0",
                                placed_at=T0).model_dump_json())
    garbage(r, b"hx-bp", dead, js(base))
    mutate(r, base, b"hx-bp-t1", may, {
        "stake": [0, -1, "1000", 1.5, None, True, 10**400, 1e308], "position": [True, 1.0, 9],
        "bet_id": ["", "..", "a/b", None], "placed_at": ["0001", None],
        "player_id": [None, 5], "bet": [None, 5]}, "placed")
    r.add("stake-1e309", "finding 9: a stake of 1e309 is dead-lettered", b"hx-bp-t1",
          b'{"type": "bet_placed", "stake": 1e309}', dead)
    for i in range(10):
        tab = f"hx-bp-nowhere-{i}"
        r.add(f"unknown-table-{i}", "a bet on an unknown table: rejected with a reason (the "
              "wallet refunds), never accepted", tab.encode(),
              BetPlaced(**bet_fields(100 + i, tab), debit_tx_id=f"stake_debit:hx-bp-b{100 + i}",
                        placed_at=T0).model_dump_json().encode(), may, bet_id=f"hx-bp-b{100 + i}")
    for i, stake in enumerate([10**15, 10**18, 2**63, 10**100]):
        r.add(f"huge-stake-{i}", "a huge stake on an unknown table", b"hx-bp-t2",
              BetPlaced(**bet_fields(200 + i, "hx-bp-t2", stake=stake),
                        debit_tx_id="x", placed_at=T0).model_dump_json().encode(), may,
              bet_id=f"hx-bp-b{200 + i}")
    mark = IntakeMark(table_id="hx-bp-t1", round_id="hx-r1", partitions=(0, 1, 2, 3),
                      partition_count=4, worker="hx", through=T0)
    r.add("forged-intake-mark", "a forged intake mark for a round that never was",
          b"hx-bp-t1", mark.model_dump_json().encode(), may)
    for i, parts in enumerate([(99,), (-1,), ()]):
        data = json.loads(mark.model_dump_json())
        data["partitions"] = list(parts)
        r.add(f"bad-intake-mark-{i}", "an intake mark naming partitions that do not exist",
              b"hx-bp-t1", js(data), may)
    dup = BetPlaced(**bet_fields(300, "hx-bp-t3"), debit_tx_id="x", placed_at=T0)
    for i in range(3):
        r.add(f"duplicate-{i}", "a duplicated bet is decided once", b"hx-bp-t3",
              dup.model_dump_json().encode(), may, bet_id="hx-bp-b300")
    r.add("wrong-key", "a bet keyed by another table than it names", b"hx-bp-elsewhere",
          BetPlaced(**bet_fields(301, "hx-bp-t4"), debit_tx_id="x",
                    placed_at=T0).model_dump_json().encode(), may, bet_id="hx-bp-b301")
    r.add("no-key", "a bet with no key", None,
          BetPlaced(**bet_fields(302, "hx-bp-t4"), debit_tx_id="x",
                    placed_at=T0).model_dump_json().encode(), may, bet_id="hx-bp-b302")
    return r


def endings(topic: str) -> Records:
    r = Records(topic, topic)
    dead = {"wallet": DEAD}
    may = {"wallet": ["dead_letter", "ignored"]}
    if topic == BETS_DECISIONS_TOPIC:
        rej = BetRejected(**bet_fields(0, "hx-en-t1"), reason_code="round_closed",
                          message="late", decided_at=T0)
        base = json.loads(rej.model_dump_json())
        valid = [("rejected", rej), ("accepted", BetAccepted(**bet_fields(1, "hx-en-t1"),
                                                             decided_at=T0)),
                 ("manifest", RoundManifest(table_id="hx-en-t1", round_id="hx-r1", bet_count=1,
                                            total_stake=1000, digest="0" * 64, closed_at=T0))]
    else:
        st = BetSettled(**bet_fields(0, "hx-en-t1"), settlement_id="settle:hx-en-b0",
                        outcome="win", returned=2000, cause="hx-en-t1:hx-r1", settled_at=T0)
        base = json.loads(st.model_dump_json())
        valid = [("settled", st), ("reversed", SettlementReversed(
            **bet_fields(1, "hx-en-t1"), reversal_id="reverse:settle:hx", settlement_id="settle:x",
            original_outcome="win", amount=2000, reason_code="misdeal", reason_text="x",
            supervisor="Sam", cause="annul:hx-en-t1:hx-r1", reversed_at=T0))]
    garbage(r, b"hx-en", dead, js(base))
    mutate(r, base, b"hx-en-t1", may, {
        "stake": [0, -1, "1", None, 10**400], "player_id": [None, 5], "bet_id": [None, 5],
        **({"returned": [-1, "2000", None, 1.5, 10**400],
            "outcome": ["jackpot", None]} if topic == BETS_SETTLED_TOPIC else
           {"reason_code": [None, 5], "decided_at": ["0001", None]})}, "ending")
    for name, model in valid:
        for i in range(5):
            data = json.loads(model.model_dump_json())
            data["player_id"] = f"hx-en-nobody-{i}"
            r.add(f"{name}-unknown-bet-{i}", "an ending for a bet (and a player) nobody "
                  "placed: no money moves (the wallet has no such bet)", b"hx-en-t1", js(data),
                  may)
    big = json.loads(valid[0][1].model_dump_json())
    big.update(player_id="hx-en-nobody-x", returned=10**18) if "returned" in big else \
        big.update(player_id="hx-en-nobody-x", stake=10**18)
    r.add("huge-amount", "a huge amount for a bet nobody placed moves no money",
          b"hx-en-t1", js(big), may)
    for i in range(3):
        r.add(f"duplicate-{i}", "a duplicated ending moves money once", b"hx-en-t1",
              js(dict(base, player_id="hx-en-nobody-dup")), may)
    r.add("wrong-key", "an ending keyed by another table", b"hx-en-elsewhere",
          js(dict(base, player_id="hx-en-nobody-wk")), may)
    r.add("no-key", "an ending with no key", None, js(dict(base, player_id="hx-en-nobody-nk")),
          may)
    return r


def wallet_commands() -> Records:
    r = Records(COMMANDS, "wallet.commands")
    dead = {"wallet": DEAD}
    may = {"wallet": ["dead_letter", "ignored"]}
    base = {"reply_id": None, "command": {"type": "deposit", "player_id": "hx-wc-p1",
                                          "request_id": "hx-wc-d1", "amount": 100}}
    garbage(r, b"hx-wc-p1", dead, js(base))
    for field, values in {"amount": [-1, 0, "100", 1.5, None, True, 10**309, 10**15 + 1],
                          "request_id": ["", "..", "a/b", None, "x" * 300],
                          "player_id": [None, 5, ""], "type": ["mint", None]}.items():
        for i, value in enumerate(values):
            cmd = dict(base["command"], **{field: value})
            r.add(f"deposit-{field}-{i}", f"a command with a wrong {field}", b"hx-wc-p1",
                  js({"reply_id": None, "command": cmd}), may)
    r.add("no-command", "an envelope with no command", b"hx-wc-p1", js({"reply_id": "x"}), dead)
    r.add("huge-balance", "finding 9: a balance past 4,300 digits never reaches the changelog",
          b"hx-wc-p1", b'{"reply_id":null,"command":{"type":"deposit","player_id":"hx-wc-p1",'
                       b'"request_id":"hx-wc-big","amount":' + b"9" * 4400 + b"}}", may)
    for i in range(10):
        cmd = {"type": "end_bet", "player_id": f"hx-wc-nobody-{i}", "bet_id": f"hx-wc-b{i}",
               "ending": "settled", "returned": 10**6, "table_id": "hx-t", "round_id": "hx-r"}
        r.add(f"end-unknown-bet-{i}", "an ending for an unknown bet and account moves nothing",
              f"hx-wc-nobody-{i}".encode(), js({"reply_id": None, "command": cmd}), may)
    for i in range(5):
        cmd = {"type": "place_bet", "player_id": f"hx-wc-nobody-{i}", "bet_id": f"hx-wc-pb{i}",
               "table_id": "hx-t", "round_id": "hx-r", "bet": "banker", "stake": 100}
        r.add(f"bet-unknown-account-{i}", "a bet for an account that does not exist",
              f"hx-wc-nobody-{i}".encode(), js({"reply_id": f"hx-{i}", "command": cmd}), may)
    for i in range(6):
        cmd = {"type": "withdrawal", "player_id": f"hx-wc-nobody-{i}",
               "request_id": f"hx-wc-w{i}", "amount": 10**6}
        r.add(f"withdraw-unknown-account-{i}", "a withdrawal from an account that does not "
              "exist moves nothing", f"hx-wc-nobody-{i}".encode(),
              js({"reply_id": None, "command": cmd}), may)
    rev = {"type": "reverse_settlement", "player_id": "hx-wc-nobody-r", "bet_id": "b",
           "reversal_id": "r", "settlement_id": "s", "amount": 10**6, "table_id": "t",
           "round_id": "r"}
    r.add("reverse-unknown", "a reversal of a settlement that never was", b"hx-wc-nobody-r",
          js({"reply_id": None, "command": rev}), may)
    for i in range(3):
        r.add(f"create-duplicate-{i}", "an account created three times: once",
              b"hx-wc-dup", js({"reply_id": None, "command": {
                  "type": "create_account", "player_id": "hx-wc-dup", "currency": "IDR"}}), may)
    r.add("wrong-key", "a command keyed by another player than it names", b"hx-wc-elsewhere",
          js({"reply_id": None, "command": {"type": "create_account", "player_id": "hx-wc-wk",
                                            "currency": "IDR"}}), may)
    return r


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row, sort_keys=True) + "\n" for row in rows))


def main() -> None:
    write_jsonl(HERE / "http.jsonl", http_cases())
    for records in (dealer_inputs(), table_events(), round_results(), bets_placed(),
                    endings(BETS_DECISIONS_TOPIC), endings(BETS_SETTLED_TOPIC), wallet_commands()):
        write_jsonl(HERE / "records" / f"{records.name}.jsonl", records.cases)
    for path in sorted(HERE.rglob("*.jsonl")):
        print(f"{path.relative_to(HERE)}: {sum(1 for _ in path.open())} cases")


if __name__ == "__main__":
    main()
