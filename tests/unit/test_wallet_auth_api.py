"""Tokens, the operator credential, the rounds view and the OpenAPI document."""

from datetime import UTC, datetime, timedelta

import pytest

from services.infra.auth import Authenticator, AuthError
from services.wallet.api_models import ROUTES, CurrentRound, openapi
from services.wallet.rounds_view import (
    KEEP_ROUNDS,
    BetRefused,
    check_round_takes_bet,
    current_round_body,
    fold,
)
from shared.events.canonical import GENESIS_HASH
from shared.events.table import BettingClosed, RoundOpened, seal

AUTH = Authenticator("player-secret", "operator-secret")
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_players_and_operator_are_told_apart():
    token = AUTH.player_token("alice")
    assert AUTH.caller(f"Bearer {token}").player_id == "alice"
    assert AUTH.caller("Bearer operator-secret").role == "operator"
    assert AUTH.require_player(f"Bearer {token}", "alice").role == "player"
    for header, status in [(None, 401), ("Bearer nope", 401), ("Basic x", 401),
                           (f"Bearer {Authenticator('other', 'o').player_token('alice')}", 401)]:
        with pytest.raises(AuthError) as err:
            AUTH.caller(header)
        assert err.value.status == status
    with pytest.raises(AuthError) as err:
        AUTH.require_player(f"Bearer {token}", "bob")
    assert err.value.status == 403
    with pytest.raises(AuthError) as err:
        AUTH.require_operator(f"Bearer {token}")
    assert err.value.status == 403


def _view(status_events=(), profile="triple-face-id"):
    opened = seal(RoundOpened, table_id="T1", seq=1, prev_hash=GENESIS_HASH, occurred_at=NOW,
                  shoe_id="s1", round_id="R1", round_number=1, dealer="D",
                  profile=profile, betting_closes_at=NOW + timedelta(seconds=30))
    view = fold(None, opened)
    for event in status_events:
        view = fold(view, event)
    return view, opened


@pytest.mark.parametrize("kwargs,status,code", [
    (dict(bet="win", position=1, stake=999), 422, "below_minimum"),
    (dict(bet="tie", position=1, stake=500_001), 422, "above_maximum"),
    (dict(bet="win", position=None, stake=1000), 422, "bad_position"),
    (dict(bet="player", position=None, stake=1000), 422, "bet_not_offered"),
    (dict(bet="win", position=1, stake=1000, round_id="R9"), 404, "unknown_round"),
])
def test_the_wallet_refuses_bad_bets_by_name(kwargs, status, code):
    view, _ = _view()
    kwargs = {"table_id": "T1", "round_id": "R1", "currency": "IDR", "now": NOW, **kwargs}
    with pytest.raises(BetRefused) as err:
        check_round_takes_bet(view, **kwargs)
    assert (err.value.status, err.value.code) == (status, code)


def test_a_closed_round_refuses_and_the_view_ignores_old_events():
    view, opened = _view()
    closed = seal(BettingClosed, table_id="T1", seq=2, prev_hash=opened.hash, occurred_at=NOW,
                  round_id="R1", reason="timer")
    view = fold(view, closed)
    assert fold(view, opened) == view and view.rounds["R1"].phase == "dealing"
    with pytest.raises(BetRefused) as err:
        check_round_takes_bet(view, table_id="T1", round_id="R1", bet="win", position=1, stake=1000,
                  currency="IDR", now=NOW)
    assert err.value.code == "round_closed"
    assert current_round_body(view)["bets"]["pair_plus"]["positions"] == [1, 2, 3, "banker"]


def test_seed002_tiger_sign_current_round_says_when_tiger_wagers_need_a_main_bet():
    """Seed 002, Tiger Baccarat: "the casino may limit the placement of any or all of the
    Tiger wagers to those players who also have a Baccarat wager on the Player's Hand,
    Banker's Hand or Tie and will display a sign at the table when this applies"."""
    tiger = CurrentRound.model_validate(current_round_body(_view(profile="sbo-tiger")[0]))
    assert [r.code for r in tiger.restrictions] == ["tiger_needs_main_bet"]
    sign = tiger.restrictions[0]
    assert sign.bets == ["big_tiger", "small_tiger", "tiger", "tiger_pair", "tiger_tie"]
    assert sign.requires_one_of == ["player", "banker", "tie"]
    assert "Player's Hand, Banker's Hand or Tie" in sign.sign and "seed 002" in sign.source
    # a table without the limit shows no sign
    for profile in ("sbo-baccarat", "triple-face-id"):
        body = CurrentRound.model_validate(current_round_body(_view(profile=profile)[0]))
        assert body.restrictions == []
    assert "TableRestriction" in openapi()["components"]["schemas"]


def test_openapi_has_every_route_with_its_schemas():
    doc = openapi()
    for route in ROUTES:
        op = doc["paths"][route.path][route.method]
        assert str(route.ok) in op["responses"]
        if route.request:
            assert route.request.__name__ in doc["components"]["schemas"]


def test_the_table_view_keeps_the_last_rounds_only_and_stays_small():
    view, prev = None, GENESIS_HASH
    for n in range(1, 3 * KEEP_ROUNDS + 1):
        opened = seal(RoundOpened, table_id="T1", seq=n, prev_hash=prev, occurred_at=NOW,
                      shoe_id="s1", round_id=f"R{n:06d}", round_number=n, dealer="D",
                      profile="triple-face-id", betting_closes_at=NOW + timedelta(seconds=30))
        view, prev = fold(view, opened), opened.hash
    assert len(view.rounds) == KEEP_ROUNDS and view.current_round == f"R{3 * KEEP_ROUNDS:06d}"
    assert f"R{2 * KEEP_ROUNDS + 1:06d}" in view.rounds and "R000001" not in view.rounds
    assert len(view.model_dump_json()) < 32 * 1024


def test_the_outbound_api_document_names_every_call_its_signature_and_its_refusals():
    """Issue 20: the seamless wallet's outbound API is documented from its models."""
    from services.wallet.outbound_api import outbound_openapi
    from shared.events.operator_wallet import ERROR_CODES
    doc = outbound_openapi()
    assert set(doc["paths"]) == {"/debit", "/credit", "/rollback", "/transactions"}
    for kind in ("debit", "credit", "rollback"):
        op = doc["paths"][f"/{kind}"]["post"]
        assert op["security"] == [{"keyId": [], "signature": []}]
        assert {"200", "5XX"} | {str(s) for s in ERROR_CODES.values()} == set(op["responses"])
    assert {"WalletRequest", "WalletResponse", "TransactionsPage"} <= set(
        doc["components"]["schemas"])
    assert doc["components"]["securitySchemes"]["signature"]["name"] == "X-Croupier-Signature"
