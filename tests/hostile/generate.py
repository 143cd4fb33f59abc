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

import base64
import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

from croupier.services.infra.auth import Authenticator
from croupier.services.infra.settings import Settings
from croupier.services.infra.table_keys import table_key
from croupier.shared.cards import parse_card
from croupier.shared.events.bet_events import (
    BetAccepted,
    BetPlaced,
    BetRejected,
    BetSettled,
    IntakeMark,
    RoundManifest,
    SettlementReversed,
)
from croupier.shared.events.canonical import GENESIS_HASH
from croupier.shared.events.inputs import (
    CloseBetting,
    NewShoe,
    OpenRound,
    ScanCard,
    VoidRound,
    make_input,
)
from croupier.shared.events.results import RoundResultPublished
from croupier.shared.events.table import (
    BettingClosed,
    CardDealt,
    RoundCompleted,
    RoundOpened,
    RoundVoided,
    ShoeStarted,
    seal,
)
from croupier.shared.profile import load_profile
from croupier.shared.rounds import evaluate_round
from croupier.shared.topics import (
    BETS_DECISIONS_TOPIC,
    BETS_PLACED_TOPIC,
    BETS_SETTLED_TOPIC,
    DEALER_INPUTS_TOPIC,
    ROUND_RESULTS_TOPIC,
    TABLE_EVENTS_TOPIC,
)

HERE = Path(__file__).resolve().parent
T0 = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
DEV = Settings(env="development")
HUGE = 900 * 1024  # under the broker's 1 MB record limit
DEAD = ["dead_letter"]
COMMANDS = "{{COMMANDS}}"
rng = random.Random(20261130)


def b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def js(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def big(head: bytes, fill: bytes, times: int, tail: bytes) -> dict:
    """A large value kept small in the corpus: head + fill * times + tail."""
    return {"head_b64": b64(head), "fill_b64": b64(fill), "times": times, "tail_b64": b64(tail)}


# ---------------------------------------------------------------------------------- HTTP

def header(name: str, value: str | bytes) -> list[str]:
    raw = value.encode("latin-1") if isinstance(value, str) else value
    return [name, b64(raw)]


OP = header("Authorization", "Bearer {{OPERATOR}}")
PL = header("Authorization", "Bearer {{PLAYER_TOKEN}}")
OTHER_PL = header("Authorization", "Bearer {{OTHER_TOKEN}}")
JSON = header("Content-Type", "application/json")


def http_cases() -> list[dict]:
    cases: list[dict] = []

    def add(name, covers, service, method, path, body=b"", headers=(), expect="4xx",
            sign=None, body_gen=None):
        cases.append({"id": f"http/{len(cases):03d}-{name}", "covers": covers,
                      "service": service, "method": method, "path": path,
                      "headers": [list(h) for h in headers],
                      "body_b64": None if body_gen else b64(body), "body_gen": body_gen,
                      "expect": expect, "sign": sign})

    garbage_bodies = {
        "deep-small": b"[" * 8000 + b"]" * 8000, "invalid-utf8": b"\xff\xfe\x00 not text",
        "overlong-utf8": b'{"a":"\xc0\xaf"}', "lone-surrogate": b'{"a":"\xed\xa0\x80"}',
        "empty": b"", "null": b"null", "array": b"[]", "string": b'"x"', "number": b"1",
        "truncated": b'{"input_id": "x', "nan": b'{"a": NaN}', "infinity": b'{"a": Infinity}',
        "bom": b"\xef\xbb\xbf{}", "nul-bytes": b"\x00" * 64, "huge-number": b"1" * 5000,
        "dup-keys": b'{"a":1,"a":2}', "control-chars": b'{"a":"\x01\x02\x1b"}',
        "random-bytes": bytes(rng.randrange(256) for _ in range(512)),
    }
    # --- dealer-event: POST /inputs
    for name, body in garbage_bodies.items():
        add(f"inputs-{name}", "finding 9: unreadable input is 400 malformed_input, not 500",
            "dealer-event", "POST", "/inputs", body, [JSON])
    deep = {"deep-array": big(b"", b"[", 40_000, b"]" * 40_000),
            "deep-object": big(b"", b'{"a":', 3_000, b"1" + b"}" * 3_000)}
    for name, gen in deep.items():
        add(f"inputs-{name}", "finding 9: deep nesting is 400/413, not 500", "dealer-event",
            "POST", "/inputs", headers=[JSON], body_gen=gen)
        add(f"deposit-{name}", "finding 9: deep nesting is 4xx, not 500", "wallet", "POST",
            "/accounts/{{PLAYER}}/deposits", headers=[OP, JSON], body_gen=gen)
        add(f"bet-{name}", "finding 9: deep nesting is 4xx, not 500", "wallet", "POST",
            "/players/{{PLAYER}}/bets", headers=[PL, JSON], body_gen=gen)
    for size in (16 * 1024 + 1, 64 * 1024, 512 * 1024, 2 * 1024 * 1024):
        add(f"inputs-oversize-{size}", "finding 7: oversize input refused before written",
            "dealer-event", "POST", "/inputs", headers=[JSON], body_gen=big(b"", b"x", size, b""))
        add(f"deposit-oversize-{size}", "an oversize wallet body is refused, not a 500",
            "wallet", "POST", "/accounts/{{PLAYER}}/deposits", headers=[OP, JSON],
            body_gen=big(b'{"request_id":"hx-big","amount":1,"pad":"', b"x", size, b'"}'))
    add("inputs-oversize-json", "finding 7: oversize but valid JSON refused (413)",
        "dealer-event", "POST", "/inputs", js({"input_id": "a", "pad": "p" * 20_000}), [JSON])
    base_input = {"schema_version": 1, "input_id": "hx-in-{{RUN}}-1", "table_id": "{{TABLE}}",
                  "sent_at": "2026-11-30T12:00:00Z", "role": "device", "signer": "device-1",
                  "command": "scan_card", "round_id": "{{ROUND}}", "card": "9S",
                  "signature": "00" * 32}
    wrong = {
        "table_id": [None, 1, True, [], {}, "", "..", "a/b", "a\nb", "x" * 65, "../../etc",
                     "\u0000", "t\u202e"],
        "input_id": [None, 1, "", "x" * 129, "a/b", ".."],
        "role": ["root", 1, None, "operator"],
        "command": ["rm_rf", None, 1, "open_round"],
        "card": ["1S", "ZZ", 9, None, "", "10X", "AS" * 100],
        "sent_at": ["0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "not a date", 0,
                    "2026-11-30T12:00:00"],
        "schema_version": [2, 0, "1", None],
        "signature": ["", "zz", None, 1, "00" * 500],
    }
    for field, values in wrong.items():
        for i, value in enumerate(values):
            body = dict(base_input, **{field: value})
            add(f"inputs-wrong-{field}-{i}", f"wrong type or value of {field}: named 4xx",
                "dealer-event", "POST", "/inputs", js(body), [JSON])
    for field in ("input_id", "table_id", "command", "role", "signer", "round_id", "card"):
        body = {k: v for k, v in base_input.items() if k != field}
        add(f"inputs-missing-{field}", f"missing field {field}: named 4xx", "dealer-event",
            "POST", "/inputs", js(body), [JSON])
    add("inputs-unknown-field", "unknown field: named 4xx", "dealer-event", "POST", "/inputs",
        js(dict(base_input, evil="yes")), [JSON])
    add("inputs-forged-signature", "forged signature: 403 refused", "dealer-event", "POST",
        "/inputs", js(base_input), [JSON])
    # signed at run time: replayed / duplicated / spoofed inputs
    signed = {k: v for k, v in base_input.items() if k != "signature"}
    for i in range(3):
        add(f"inputs-replayed-{i}", "replayed input (same id, same signature): answered as "
            "before, applied once", "dealer-event", "POST", "/inputs",
            js(dict(signed, input_id="hx-in-{{RUN}}-replay", card="KD")), [JSON],
            expect="2xx|4xx", sign="device")
    add("inputs-spoofed-id", "finding 8: a forged input reusing a genuine input id is refused "
        "and does not answer for the genuine one", "dealer-event", "POST", "/inputs",
        js(dict(base_input, input_id="hx-in-{{RUN}}-replay", card="2C")), [JSON])
    add("inputs-unknown-table", "signed input for a table with no shoe: refused by name",
        "dealer-event", "POST", "/inputs",
        js(dict(signed, table_id="hx-noshoe-{{RUN}}", input_id="hx-in-{{RUN}}-ns")), [JSON],
        sign="device")
    add("inputs-device-void", "a device may not void: refused by name", "dealer-event", "POST",
        "/inputs", js(dict(signed, command="void_round", reason_code="misdeal",
                           reason_text="x", input_id="hx-in-{{RUN}}-dv", card=None)),
        [JSON], sign="device")
    add("inputs-get", "wrong method", "dealer-event", "GET", "/inputs")
    for tid in ("..", "%2e%2e", "a%2Fb", "%00", "x" * 300, "%ff%fe", "t%0d%0aX-Evil:1"):
        add(f"tables-{tid[:12]}", "ids with .., /, control characters on GET /tables/{id}",
            "dealer-event", "GET", f"/tables/{tid}", expect="2xx|4xx")

    # --- wallet
    for name, body in garbage_bodies.items():
        add(f"deposit-{name}", "finding 9: unreadable operator body is 400/422, not 500",
            "wallet", "POST", "/accounts/{{PLAYER}}/deposits", body, [OP, JSON])
        add(f"bet-{name}", "finding 9: unreadable bet body is 400/422, not 500", "wallet",
            "POST", "/players/{{PLAYER}}/bets", body, [PL, JSON])
    amounts = {"1e309": b"1e309", "10^309": b"1" + b"0" * 309, "4400-digits": b"9" * 4400,
               "negative": b"-100", "zero": b"0", "float": b"100.5", "true": b"true",
               "string": b'"100"', "null": b"null", "over-bound": b"1000000000000001",
               "neg-zero": b"-0", "exp-int": b"1e3", "list": b"[100]"}
    for name, raw in amounts.items():
        body = b'{"request_id":"hx-dep-' + name.encode() + b'","amount":' + raw + b"}"
        add(f"deposit-amount-{name}", "finding 9: operator amounts bounded, strict types",
            "wallet", "POST", "/accounts/{{PLAYER}}/deposits", body, [OP, JSON])
        add(f"withdraw-amount-{name}", "finding 9: withdrawal amounts bounded, strict types",
            "wallet", "POST", "/accounts/{{PLAYER}}/withdrawals",
            body.replace(b"hx-dep", b"hx-wd"), [OP, JSON])
        stake = b'{"bet_id":"hx-b-' + name.encode() + b'","table_id":"{{TABLE}}",' \
                b'"round_id":"{{ROUND}}","bet":"banker","stake":' + raw + b"}"
        add(f"bet-stake-{name}", "stakes: strict positive integers", "wallet", "POST",
            "/players/{{PLAYER}}/bets", stake, [PL, JSON])
    bet = {"bet_id": "hx-bet-{{RUN}}", "table_id": "{{TABLE}}", "round_id": "{{ROUND}}",
           "bet": "banker", "stake": 1000}
    for i, pos in enumerate([True, 1.0, "1", 0, 4, -1, [], {}, "Banker", 1e309]):
        add(f"bet-position-{i}", "finding 9: position true / 1.0 are not position 1",
            "wallet", "POST", "/players/{{PLAYER}}/bets",
            js(dict(bet, bet_id=f"hx-pos-{i}", position=pos)), [PL, JSON])
    for field in ("bet_id", "table_id", "round_id", "bet", "stake"):
        add(f"bet-missing-{field}", f"missing {field}", "wallet", "POST",
            "/players/{{PLAYER}}/bets", js({k: v for k, v in bet.items() if k != field}),
            [PL, JSON])
    add("bet-unknown-field", "unknown field in a bet", "wallet", "POST",
        "/players/{{PLAYER}}/bets", js(dict(bet, bet_id="hx-unk", evil=1)), [PL, JSON],
        expect="2xx|4xx")
    for i, bad in enumerate(["..", ".", "a/b", "a\nb", "a\x00b", "x" * 200, "", "a b", "é"]):
        add(f"bet-id-{i}", "finding 10: ids with .., /, control characters", "wallet", "POST",
            "/players/{{PLAYER}}/bets", js(dict(bet, bet_id=bad)), [PL, JSON])
        add(f"bet-table-id-{i}", "finding 10: table ids with .., /, control characters",
            "wallet", "POST", "/players/{{PLAYER}}/bets",
            js(dict(bet, bet_id=f"hx-tid-{i}", table_id=bad)), [PL, JSON])
        add(f"account-id-{i}", "finding 10: an account named .. or with / is refused",
            "wallet", "POST", "/accounts", js({"player_id": bad, "currency": "IDR"}),
            [OP, JSON])
        add(f"deposit-request-id-{i}", "finding 10: request ids with .., /, controls",
            "wallet", "POST", "/accounts/{{PLAYER}}/deposits",
            js({"request_id": bad, "amount": 100}), [OP, JSON])
    add("bet-unknown-table", "a bet on an unknown table", "wallet", "POST",
        "/players/{{PLAYER}}/bets", js(dict(bet, bet_id="hx-ut", table_id="hx-nowhere")),
        [PL, JSON])
    add("bet-unknown-round", "a bet on a round that never was", "wallet", "POST",
        "/players/{{PLAYER}}/bets", js(dict(bet, bet_id="hx-ur", round_id="hx-never")),
        [PL, JSON])
    add("bet-not-offered", "a bet the table does not offer", "wallet", "POST",
        "/players/{{PLAYER}}/bets", js(dict(bet, bet_id="hx-no", bet="pair_plus")), [PL, JSON])
    add("bet-no-funds", "a stake above the balance", "wallet", "POST",
        "/players/{{PLAYER}}/bets", js(dict(bet, bet_id="hx-nf", stake=10**14)), [PL, JSON])
    # authorization: forged, expired, garbage, invalid UTF-8, another's account
    later = 4_000_000_000.0  # fixed clock: the corpus is deterministic
    forged = Authenticator("not-the-secret", "x", now=lambda: later).player_token("{{PLAYER}}")
    expired = Authenticator(DEV.player_token_secret, DEV.operator_token,
                            key_id=DEV.player_token_key_id, ttl_seconds=60,
                            now=lambda: 1_000_000.0).player_token("{{PLAYER}}")
    retired = Authenticator("old", "x", key_id="k0", now=lambda: later).player_token("{{PLAYER}}")
    auths = {
        "none": None, "empty": b"", "bearer-only": b"Bearer", "bearer-space": b"Bearer ",
        "basic": b"Basic dXNlcjpwYXNz", "garbage": b"Bearer garbage", "forged": (
            "Bearer " + forged).encode(), "expired": ("Bearer " + expired).encode(),
        "retired-key": ("Bearer " + retired).encode(),
        "invalid-utf8": b"Bearer \xff\xfe", "invalid-utf8-2": b"Bearer \xc3\x28",
        "latin1": b"Bearer caf\xe9", "nul": b"Bearer a\x00b", "long": b"Bearer " + b"a" * 6000,
        "dots": b"Bearer k1...", "operator-prefix": b"Bearer {{OPERATOR}}x",
        "lowercase-scheme": b"bearer nope", "tab": b"Bearer\tnope",
    }
    for name, value in auths.items():
        hs = [] if value is None else [header("Authorization", value)]
        add(f"balance-auth-{name}", "finding 9/6: bad credentials are 401, never 500",
            "wallet", "GET", "/players/{{PLAYER}}/balance", headers=hs)
        add(f"deposit-auth-{name}", "operator routes refuse bad credentials", "wallet", "POST",
            "/accounts/{{PLAYER}}/deposits", js({"request_id": "hx-auth", "amount": 1}),
            [*hs, JSON])
        add(f"bet-auth-{name}", "bets refuse bad credentials", "wallet", "POST",
            "/players/{{PLAYER}}/bets", js(dict(bet, bet_id=f"hx-auth-{name}")), [*hs, JSON])
        add(f"report-auth-{name}", "finding 9: operator API refuses bad credentials (no 500)",
            "operator-api", "GET", "/rounds/{{TABLE}}/{{ROUND}}/report?at=2026-11-30T12:00:00Z",
            headers=hs)
    for name, method, path, body in [
            ("balance", "GET", "/players/{{OTHER}}/balance", b""),
            ("transactions", "GET", "/players/{{OTHER}}/transactions", b""),
            ("bet", "POST", "/players/{{OTHER}}/bets", js(dict(bet, bet_id="hx-other"))),
            ("token", "POST", "/players/{{OTHER}}/token", b""),
            ("deposit", "POST", "/accounts/{{OTHER}}/deposits",
             js({"request_id": "hx-steal", "amount": 100})),
            ("withdraw", "POST", "/accounts/{{OTHER}}/withdrawals",
             js({"request_id": "hx-steal", "amount": 100})),
            ("account", "GET", "/accounts/{{OTHER}}", b""),
            ("own-deposit", "POST", "/accounts/{{PLAYER}}/deposits",
             js({"request_id": "hx-self", "amount": 100}))]:
        add(f"cross-{name}", "a player acting on another's account (or an operator route): "
            "403", "wallet", method, path, body, [PL, JSON])
    for q in ("limit=-1", "limit=1000000", "limit=abc", "after=-5", "after=1e309",
              "limit=1.5", "after=" + "9" * 400, "limit=%00"):
        add(f"transactions-{q[:14]}", "paging parameters out of range", "wallet", "GET",
            "/players/{{PLAYER}}/transactions?" + q, headers=[PL], expect="2xx|4xx")
    for tid in ("..", "%2e%2e", "a%2Fb", "%00", "x" * 300):
        add(f"current-round-{tid[:8]}", "ids with .., /, controls on a public route",
            "wallet", "GET", f"/tables/{tid}/current-round")
    add("account-exists", "an account opened twice: the original answer, or 409", "wallet",
        "POST", "/accounts", js({"player_id": "{{PLAYER}}", "currency": "IDR"}), [OP, JSON],
        expect="2xx|4xx")
    add("account-bad-currency", "unknown currency", "wallet", "POST", "/accounts",
        js({"player_id": "hx-cur-{{RUN}}", "currency": "X" * 80}), [OP, JSON])
    add("account-unknown", "unknown account", "wallet", "GET", "/accounts/hx-nobody",
        headers=[OP])
    add("deposit-unknown", "a deposit to an unknown account", "wallet", "POST",
        "/accounts/hx-nobody/deposits", js({"request_id": "hx-d", "amount": 1}), [OP, JSON])
    for i in range(3):
        add(f"deposit-duplicate-{i}", "a duplicated deposit moves money once", "wallet", "POST",
            "/accounts/{{PLAYER}}/deposits", js({"request_id": "hx-dup-{{RUN}}", "amount": 7}),
            [OP, JSON], expect="2xx")
    add("deposit-id-conflict", "same request id, other amount: 409", "wallet", "POST",
        "/accounts/{{PLAYER}}/deposits", js({"request_id": "hx-dup-{{RUN}}", "amount": 8}),
        [OP, JSON])
    add("withdraw-too-much", "a withdrawal above the balance: 402", "wallet", "POST",
        "/accounts/{{PLAYER}}/withdrawals",
        js({"request_id": "hx-wd-big-{{RUN}}", "amount": 10**15}), [OP, JSON])

    # --- operator API: out-of-range dates, bad formats
    report = "/rounds/{{TABLE}}/{{ROUND}}/report"
    for q in ("at=0001-01-01T00:00:00Z", "at=9999-12-31T23:59:59Z", "at=not-a-date",
              "at=", "", "at=2026-11-30T12:00:00Z&format=pdf",
              "at=1e309", "at=" + "9" * 400, "at=2026-13-45T99:99:99Z", "at=%ff%fe"):
        add(f"report-{q[:24]}", "finding 9: out-of-range dates on the operator API: 4xx",
            "operator-api", "GET", f"{report}?{q}", headers=[OP])
    for tid in ("..", "a%2Fb", "%00", "x" * 300):
        add(f"report-table-{tid[:8]}", "odd ids on the operator API", "operator-api", "GET",
            f"/rounds/{tid}/r1/report?at=2026-11-30T12:00:00Z", headers=[OP])
    add("report-complaint-time", "issue 31: a round's report takes no complaint time (a "
        "complaint is filed on the platform's clock): 4xx", "operator-api", "GET",
        f"{report}?at=2026-11-30T12:00:00Z&complaint_at=2020-01-01T00:00:00Z&player=p&dealer=d",
        headers=[OP])

    # --- operator API: complaints (issue 31: the complaint clock is the platform's)
    complaint = {"player_id": "{{PLAYER}}", "played_at": "2026-11-30T12:00:00Z",
                 "dealer": "Ana", "table_id": "{{TABLE}}", "round_id": "{{ROUND}}"}
    for name, body in (
            ("filed-at-0001", {**complaint, "filed_at": "0001-01-01T00:00:00Z"}),
            ("filed-at-back-dated", {**complaint, "filed_at": "2026-11-30T12:05:00Z"}),
            ("complaint-at", {**complaint, "complaint_at": "2026-11-30T12:05:00Z"}),
            ("played-at-0001", {**complaint, "played_at": "0001-01-01T00:00:00Z"}),
            ("played-at-9999", {**complaint, "played_at": "9999-12-31T23:59:59Z"}),
            ("played-at-number", {**complaint, "played_at": 1e309}),
            ("incomplete", {"player_id": "{{PLAYER}}"}),
            ("unknown-field", {**complaint, "overide": "typo"}),
            ("bad-table", {**complaint, "table_id": "../x"}),
            ("unknown-round", {**complaint, "round_id": "hx-no-such-round"}),
            ("long-override", {**complaint, "override": "x" * 5000})):
        add(f"complaint-{name}", "issue 31: a complaint names what RULES §6 asks and no time "
            "of filing (the platform stamps it): 4xx", "operator-api", "POST", "/complaints",
            js(body), [OP, JSON])
    for name, body in (("array", b"[]"), ("truncated", b'{"player_id": "x'),
                       ("invalid-utf8", b"\xff\xfe")):
        add(f"complaint-body-{name}", "a complaint body that is no JSON object: 4xx",
            "operator-api", "POST", "/complaints", body, [OP, JSON])
    add("complaint-player-token", "a player's token filing a complaint: 403", "operator-api",
        "POST", "/complaints", js(complaint), [PL, JSON])
    for cid in ("..", "x" * 300, "%00", "0" * 32):
        add(f"complaint-report-{cid[:8]}", "a complaint report by an id filing never gave, or "
            "one not on the log: 4xx", "operator-api", "GET", f"/complaints/{cid}/report",
            headers=[OP])
    return cases


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
