"""Issue 20 item 4: a table profile's limits and chips per currency (each currency's minor
units, JPY and IDR included), chosen by the player's currency at the wallet's door and in
bet-settlement's binding check; a bet in a currency the table does not offer is refused
`currency_not_offered` (docs/decisions/currencies.md)."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta

import pytest
from babel.numbers import get_currency_precision

from services.bet_settlement import round_book
from services.simulators.players import PlayerSimulator
from services.wallet import money_metrics
from services.wallet.api_models import CurrentRound, Tables
from services.wallet.rounds_view import (
    BetRefused,
    KnownRound,
    TableRounds,
    check_round_takes_bet,
    current_round_body,
    round_rules,
    tables_body,
)
from shared.currency import (
    MINOR_UNITS,
    CurrencyError,
    amount_text,
    check_currency,
    minor_units,
)
from shared.events.table import RoundOpened
from shared.profile import (
    ProfileError,
    load_profile,
    parse_profile,
    profile_data,
    profiles_dir,
)
from shared.settlement import (
    BET_ERROR_CODES,
    Bet,
    BetError,
    accept_bet,
    table_limits,
    validate_bet,
)
from tests.unit.round_book_support import NOW, event, placed

# --- the currency table --------------------------------------------------------------------


def test_minor_units_are_iso_4217_jpy_0_idr_2_and_agree_with_cldr():
    assert (minor_units("JPY"), minor_units("IDR"), minor_units("USD"), minor_units("KRW"),
            minor_units("THB"), minor_units("EUR")) == (0, 2, 2, 0, 2, 2)
    # the console shows amounts through Babel (CLDR): the same digits for every listed code
    assert {code: get_currency_precision(code) for code in MINOR_UNITS} == MINOR_UNITS


@pytest.mark.parametrize("code", ["XYZ", "jpy", "", "US", "EURO"])
def test_an_unknown_currency_is_refused_by_name(code):
    with pytest.raises(CurrencyError, match=f"unknown currency {code!r}.*ISO 4217"):
        check_currency(code)
    with pytest.raises(CurrencyError):
        minor_units(code)


@pytest.mark.parametrize(("amount", "currency", "text"), [
    (1000, "IDR", "IDR 10.00"), (5_000_000, "IDR", "IDR 50,000.00"), (1_234_567, "JPY", "JPY 1,234,567"),
    (5, "USD", "USD 0.05"), (-105, "EUR", "EUR -1.05"), (100, "KRW", "KRW 100"),
    (7, "XYZ", "7 XYZ minor units")])
def test_amounts_in_messages_are_in_the_currencys_unit(amount, currency, text):
    assert amount_text(amount, currency) == text


# --- profiles: limits and chips per currency, validated at load ----------------------------

def _data(name="triple-face-jp") -> dict:
    return copy.deepcopy(profile_data(name, load_profile(name).version))


def test_shipped_profiles_state_limits_per_currency_jpy_and_idr_included():
    jp, tf_id = load_profile("triple-face-jp"), load_profile("triple-face-id")
    assert jp.offered_currencies() == ("JPY", "IDR", "USD")
    assert "IDR" in tf_id.offered_currencies() and "JPY" in tf_id.offered_currencies()
    yen = jp.limits_in("JPY")
    assert yen is not None and yen.bets["win"].min_stake == 100  # JPY 100: 0 minor units
    assert yen.chips == (100, 500, 1000, 5000, 10000, 50000)
    assert jp.limits_in("IDR").bets["win"].min_stake == 1000  # IDR 10.00
    assert jp.limits_in("EUR") is None
    for name in ("sbo-baccarat", "sbo-super-six", "sbo-tiger"):
        offered = load_profile(name).offered_currencies()
        assert offered is not None and {"USD", "IDR"} <= set(offered)


def test_a_new_version_keeps_the_idr_meaning_of_version_1():
    """v1 took any currency with one set of limits; v2's IDR limits are those numbers."""
    for name in ("sbo-baccarat", "sbo-super-six", "sbo-tiger", "triple-face-id",
                 "triple-face-jp"):
        old, new = load_profile(name, 1), load_profile(name)
        assert new.version == 2 and old.offered_currencies() is None
        assert old.limits_in("IDR").bets == new.limits_in("IDR").bets
        assert {b: s.pays for b, s in old.bets.items()} == {b: s.pays for b, s in new.bets.items()}


def test_a_profile_without_per_currency_limits_means_what_it_did():
    legacy = load_profile("baccarat-big-small")
    assert legacy.currencies is None and legacy.offered_currencies() is None
    for code in ("IDR", "JPY", "USD", "ZZZ"):  # any currency, the same numbers, no chips
        limits = legacy.limits_in(code)
        assert limits is not None and limits.chips == ()
        assert limits.bets["player"].min_stake == legacy.bets["player"].min_stake == 1000
    one = _data("baccarat-big-small") | {"currency": "IDR"}
    idr_only = parse_profile(one)
    assert idr_only.offered_currencies() == ("IDR",)
    assert idr_only.limits_in("IDR") is not None and idr_only.limits_in("JPY") is None


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d["currencies"].update(XYZ=d["currencies"]["JPY"]), "unknown currency 'XYZ'"),
    (lambda d: d["currencies"]["USD"]["bets"].pop("tie"),
     "currency USD: limits for bets .* every offered bet needs limits in every offered"),
    (lambda d: d["currencies"]["USD"]["bets"].update(three_knights={"min_stake": 1,
                                                                    "max_stake": 2}),
     "currency USD: limits for bets"),
    (lambda d: d["currencies"]["JPY"].update(chips=[100, 1_000_000]),
     r"chips \[1000000\] are outside the table's limits 100..500000"),
    (lambda d: d["currencies"]["JPY"].update(chips=[50, 100]), r"chips \[50\] are outside"),
    (lambda d: d["currencies"]["JPY"].update(chips=[500, 100]), "not distinct and ascending"),
    (lambda d: d["currencies"]["JPY"].update(chips=[]), "chips"),
    (lambda d: d["currencies"]["JPY"].update(chips=[100.5]), "chips"),
    (lambda d: d["currencies"]["JPY"]["bets"]["tie"].update(min_stake=60_000),
     "min_stake 60000 is above max_stake 50000"),
    (lambda d: d["currencies"]["JPY"]["bets"]["tie"].update(min_stake=1.5), "min_stake"),
    (lambda d: d.update(currency="JPY"), "either `currency`.*or `currencies`"),
    (lambda d: d["bets"]["tie"].update(min_stake=100, max_stake=200),
     r"bets \['tie'\] state min_stake/max_stake beside `currencies`"),
    (lambda d: d.pop("currencies"), "have no min_stake/max_stake"),
    (lambda d: d.update(currencies={}), "currencies"),
])
def test_profile_currency_problems_are_refused_at_load(change, message):
    data = _data()
    change(data)
    with pytest.raises(ProfileError, match=message):
        parse_profile(data)


def test_an_unknown_single_currency_is_refused_too():
    with pytest.raises(ProfileError, match="unknown currency 'RUPIAH'"):
        parse_profile(_data("baccarat-big-small") | {"currency": "RUPIAH"})


def test_the_shipped_files_state_integers_only():
    for path in profiles_dir().glob("*.json"):
        for table in (json.loads(path.read_text()).get("currencies") or {}).values():
            assert all(type(chip) is int for chip in table["chips"])
            assert all(type(v) is int for limits in table["bets"].values()
                       for v in limits.values())


# --- the rule engine: the limits of the player's currency ----------------------------------

def test_validate_bet_uses_the_players_currency():
    jp = load_profile("triple-face-jp")
    validate_bet(Bet(bet="win", position=1, stake=100), jp, "JPY")  # JPY 100: the minimum
    with pytest.raises(BetError) as low:
        validate_bet(Bet(bet="win", position=1, stake=100), jp, "IDR")  # IDR 1.00 < IDR 10.00
    assert low.value.code == "below_minimum"
    assert str(low.value) == "stake IDR 1.00 is below the 'win' minimum of IDR 10.00"
    with pytest.raises(BetError) as high:
        validate_bet(Bet(bet="tie", position=1, stake=50_001), jp, "JPY")
    assert high.value.code == "above_maximum"
    assert str(high.value) == "stake JPY 50,001 is above the 'tie' maximum of JPY 50,000"
    validate_bet(Bet(bet="tie", position=1, stake=50_001), jp, "IDR")  # IDR's maximum is higher


def test_a_currency_the_table_does_not_offer_is_refused_by_name():
    assert "currency_not_offered" in BET_ERROR_CODES
    jp = load_profile("triple-face-jp")
    with pytest.raises(BetError) as no:
        validate_bet(Bet(bet="win", position=1, stake=1000), jp, "EUR")
    assert no.value.code == "currency_not_offered"
    assert str(no.value) == ("table profile 'triple-face-jp' does not offer EUR; offered: "
                             "JPY, IDR, USD")
    with pytest.raises(BetError, match="currency_not_offered|does not offer EUR"):
        table_limits(jp, "EUR")


def test_the_spot_maximum_is_the_players_currency_maximum():
    bac = load_profile("sbo-baccarat")
    usd_max = bac.limits_in("USD").bets["player"].max_stake
    accept_bet(Bet(bet="player", stake=100), bac, "USD", usd_max - 100, True)
    with pytest.raises(BetError) as over:
        accept_bet(Bet(bet="player", stake=101), bac, "USD", usd_max - 100, True)
    assert over.value.code == "spot_maximum"
    assert "table maximum of USD 5,000.00 per spot" in str(over.value)


# --- the wallet's door and its tables listing ----------------------------------------------

CLOSES = datetime(2030, 1, 1, tzinfo=UTC)


def _view(profile="triple-face-jp", version: int | None = 2) -> TableRounds:
    return TableRounds(table_id="T1", current_round="R1", rounds={"R1": KnownRound(
        round_id="R1", phase="betting", profile=profile, profile_version=version,
        betting_closes_at=CLOSES, seq=1)})


def _door(view, currency, bet="win", stake=1000, position=1):
    check_round_takes_bet(view, table_id="T1", round_id="R1", bet=bet, position=position,
                          stake=stake, currency=currency, now=CLOSES - timedelta(seconds=5))


def test_the_door_chooses_the_limits_by_the_players_currency():
    view = _view()
    _door(view, "JPY", stake=100)
    _door(view, "IDR", stake=1000)
    with pytest.raises(BetRefused) as low:
        _door(view, "IDR", stake=100)
    assert (low.value.status, low.value.code) == (422, "below_minimum")
    assert "minimum of IDR 10.00" in low.value.message
    with pytest.raises(BetRefused) as no:
        _door(view, "KRW")
    assert (no.value.status, no.value.code) == (422, "currency_not_offered")
    assert "does not offer KRW" in no.value.message and "JPY, IDR, USD" in no.value.message
    assert "currency_not_offered" in money_metrics.DOOR_REASONS
    # the table maximum per spot the ledger checks is the player's currency's
    assert round_rules(view, "R1", "win", "JPY") == (500_000, False)
    assert round_rules(view, "R1", "win", "IDR") == (5_000_000, False)
    assert round_rules(view, "R1", "win", "KRW") == (None, False)


def test_an_older_round_keeps_its_v1_limits_in_any_currency_at_the_door():
    view = _view(version=None)  # a round recorded before versions: v1, any currency
    _door(view, "KRW", stake=1000)
    with pytest.raises(BetRefused) as low:
        _door(view, "JPY", stake=100)
    assert low.value.code == "below_minimum" and "JPY 1,000" in low.value.message


def test_the_current_round_shows_limits_and_chips_in_the_asked_currency():
    body = current_round_body(_view(), "JPY")
    CurrentRound.model_validate(body)
    assert body["currencies"] == ["JPY", "IDR", "USD"]
    [yen] = body["limits"]
    assert yen["currency"] == "JPY" and yen["chips"] == [100, 500, 1000, 5000, 10000, 50000]
    assert body["bets"]["win"] == {"min_stake": 100, "max_stake": 500_000,
                                   "positions": [1, 2, 3]}
    every = current_round_body(_view())  # none asked: every currency's, none in `bets`
    CurrentRound.model_validate(every)
    assert [e["currency"] for e in every["limits"]] == ["JPY", "IDR", "USD"]
    assert every["bets"]["win"]["min_stake"] is None
    other = current_round_body(_view(), "EUR")  # not offered: no limits to show
    assert other["limits"] == [] and other["bets"]["win"]["min_stake"] is None
    legacy = current_round_body(_view("baccarat-big-small", 1))  # one set: any currency
    assert legacy["currencies"] is None and legacy["limits"][0]["currency"] is None
    assert legacy["bets"]["player"]["min_stake"] == 1000


def test_the_tables_list_shows_each_tables_limits_in_the_asked_currency():
    views = {"T1": _view(), "T2": _view("baccarat-big-small", 1).model_copy(
        update={"table_id": "T2"})}
    body = tables_body(views, "IDR")
    Tables.model_validate(body)
    jp, legacy = body["tables"]
    assert jp["currencies"] == ["JPY", "IDR", "USD"] and legacy["currencies"] is None
    assert [e["currency"] for e in jp["limits"]] == ["IDR"] == [e["currency"]
                                                              for e in legacy["limits"]]
    assert jp["limits"][0]["bets"]["win"] == {"min_stake": 1000, "max_stake": 5_000_000}
    assert len(tables_body(views)["tables"][0]["limits"]) == 3


# --- bet-settlement's binding check --------------------------------------------------------

def _round(profile="triple-face-jp"):
    opened = event(RoundOpened, 1, "R1", shoe_id="s1", round_number=1, dealer="D",
                   profile=profile, profile_version=2,
                   betting_closes_at=NOW + timedelta(seconds=30))
    return round_book.on_table_event(None, opened, NOW)[0]


def _decide(state, *bets):
    codes = []
    for bet in bets:
        state, out = round_book.on_bet(state, bet, NOW)
        codes += [(getattr(r, "reason_code", "accepted"), getattr(r, "message", ""))
                  for _, _, r in out if type(r).__name__ in ("BetAccepted", "BetRejected")]
    return codes


def _placed(bet_id, currency, stake, bet="win", position=1):
    return placed(bet_id, bet=bet, stake=stake, position=position).model_copy(
        update={"currency": currency})


def test_bet_settlement_decides_by_the_bets_currency():
    decided = _decide(_round(), _placed("a", "JPY", 100), _placed("b", "IDR", 100),
                      _placed("c", "EUR", 1000), _placed("d", "USD", 100))
    assert [code for code, _ in decided] == ["accepted", "below_minimum",
                                             "currency_not_offered", "accepted"]
    assert "does not offer EUR; offered: JPY, IDR, USD" in decided[2][1]
    assert "minimum of IDR 10.00" in decided[1][1]


def test_bet_settlement_spot_maximum_counts_in_the_players_currency():
    jpy_max = load_profile("triple-face-jp").limits_in("JPY").bets["tie"].max_stake
    decided = _decide(_round(), _placed("a", "JPY", jpy_max, bet="tie"),
                      _placed("b", "JPY", 100, bet="tie"))
    assert [code for code, _ in decided] == ["accepted", "spot_maximum"]
    assert "table maximum of JPY 50,000 per spot" in decided[1][1]


# --- the player simulator ------------------------------------------------------------------

def test_the_simulator_stakes_chips_valid_in_its_currency():
    for currency in ("JPY", "IDR", "USD"):
        sim = PlayerSimulator(wallet_url="http://x", operator_token="t", tables=["T1"],
                              currency=currency, seed=3)
        info = current_round_body(_view(), currency)
        limits = load_profile("triple-face-jp").limits_in(currency)
        for _ in range(200):
            bet = sim._good_bet(info)
            spec = limits.bets[bet["bet"]]
            assert spec.min_stake <= bet["stake"] <= spec.max_stake
            assert type(bet["stake"]) is int
            assert any(bet["stake"] % chip == 0 for chip in limits.chips)


def test_the_simulator_bets_nothing_where_its_currency_is_not_offered():
    import asyncio

    sim = PlayerSimulator(wallet_url="http://x", operator_token="t", tables=["T1"],
                          currency="EUR")
    info = current_round_body(_view(), "EUR")
    assert asyncio.run(sim.bet_on_round(info)) == {}


def test_an_account_in_a_currency_the_platform_does_not_know_is_refused_by_name():
    """A player's currency chooses every table's limits: an account is opened only in a
    currency of the table of minor units."""
    import pydantic

    from services.wallet.api_models import CreateAccountRequest
    assert CreateAccountRequest(player_id="p", currency="JPY").currency == "JPY"
    with pytest.raises(pydantic.ValidationError, match="unknown currency 'ABC'"):
        CreateAccountRequest(player_id="p", currency="ABC")


def test_accept_bet_checks_the_limits_in_the_players_currency_before_the_round_rules():
    """One function decides a bet's acceptance: a stake under the minimum in the player's
    currency is refused as such, even with nothing yet on the spot."""
    bac = load_profile("sbo-baccarat")
    usd_min = bac.limits_in("USD").bets["player"].min_stake
    with pytest.raises(BetError) as under:
        accept_bet(Bet(bet="player", stake=usd_min - 1), bac, "USD", 0, True)
    assert under.value.code == "below_minimum"
    accept_bet(Bet(bet="player", stake=usd_min), bac, "USD", 0, True)


@pytest.mark.parametrize("profile", ["sbo-baccarat", "sbo-tiger", "triple-face-id",
                                     "triple-face-jp"])
def test_the_bet_beyond_funds_is_one_the_door_takes_from_a_player_with_no_other_bet(profile):
    """The seamless kill loop's certain 402: the poorly funded player (2,000 at the operator)
    bets a table's maximum, on a bet no restriction refuses at the door first (at a Tiger
    table, a Tiger wager alone is refused needs_main_bet before any money is asked for)."""
    view = _view(profile, version=None)
    info = current_round_body(view, "IDR")
    restricted = {b for r in info["restrictions"] for b in r["bets"]}
    assert restricted or profile != "sbo-tiger"
    bet = PlayerSimulator._largest_open_bet(info)
    assert bet["bet"] not in restricted and bet["stake"] > 2_000
    _door(view, "IDR", bet=bet["bet"], stake=bet["stake"], position=bet["position"])


def test_the_simulator_bets_once_on_each_round_it_sees_open():
    """`watch` (croupier simulate-players): a round seen open again is not bet on again, a
    round not open is not bet on, and the round before a new one is noted as closed."""
    import asyncio

    seen = iter([{"table_id": "T1", "round_id": "R1", "status": "open"},
                 {"table_id": "T1", "round_id": "R1", "status": "open"},
                 {"table_id": "T1", "round_id": "R1", "status": "dealing"},
                 {"table_id": "T1", "round_id": "R2", "status": "open"}])
    bet_on: list[str] = []

    class Scripted(PlayerSimulator):
        async def current_round(self, table_id):
            return next(seen, None)

        async def bet_on_round(self, info, bets_per_player=2):
            bet_on.append(info["round_id"])

    sim = Scripted(wallet_url="http://x", operator_token="t", tables=["T1"])
    asyncio.run(sim.watch(duration_s=0.5, poll_s=0.01))
    assert bet_on == ["R1", "R2"] and sim.closed_rounds == {"T1": "R1"}
