"""The hostile corpus's HTTP cases (`generate`, which writes them to `http.jsonl`)."""

from __future__ import annotations

from services.infra.auth import Authenticator
from tests.hostile.gen_common import DEV, b64, big, js, rng

# ---------------------------------------------------------------------------------- HTTP

def header(name: str, value: str | bytes) -> list[str]:
    raw = value.encode("latin-1") if isinstance(value, str) else value
    return [name, b64(raw)]


OP = header("Authorization", "Bearer {{OPERATOR}}")
PL = header("Authorization", "Bearer {{PLAYER_TOKEN}}")
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
