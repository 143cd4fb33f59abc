"""Issue 11 finding 6: no development secret in production; player tokens expire and
their keys rotate without logging anyone out."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from services.infra.auth import Authenticator, AuthError
from services.infra.settings import DEVELOPMENT_SECRETS, InsecureSettings, Settings

ROOT = Path(__file__).resolve().parents[2]
OWN = {"table_signing_secret": "t-" + "x" * 30, "operator_token": "o-" + "y" * 30,
       "player_token_secret": "p-" + "z" * 30, "table_events_key": "e-" + "w" * 30}


def test_production_is_the_default():
    assert Settings.model_fields["env"].default == "production"


@pytest.mark.parametrize("name", sorted(DEVELOPMENT_SECRETS))
def test_production_refuses_each_development_secret_by_name(name):
    settings = Settings(env="production", **{**OWN, name: DEVELOPMENT_SECRETS[name]})
    with pytest.raises(InsecureSettings) as refused:
        settings.require_production_secrets("wallet")
    message = str(refused.value)
    assert f"CROUPIER_{name.upper()}" in message and "wallet" in message
    assert DEVELOPMENT_SECRETS[name] not in message  # a secret is never echoed


def test_production_names_every_development_secret_at_once():
    with pytest.raises(InsecureSettings) as refused:
        Settings(env="production").require_production_secrets("dealer-event")
    assert all(f"CROUPIER_{name.upper()}" in str(refused.value) for name in DEVELOPMENT_SECRETS)


def test_production_starts_with_secrets_of_its_own_and_development_with_the_defaults():
    Settings(env="production", **OWN).require_production_secrets("wallet")
    Settings(env="development").require_production_secrets("wallet")


def test_a_retired_development_key_is_refused_too():
    settings = Settings(env="production", **OWN,
                        player_token_previous_keys={"k0": DEVELOPMENT_SECRETS["player_token_secret"]})
    with pytest.raises(InsecureSettings, match=r"player_token_previous_keys\[k0\]"):
        settings.require_production_secrets("wallet")


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def _auth(clock: Clock, **kwargs) -> Authenticator:
    return Authenticator("current-key", "operator-secret", ttl_seconds=3600, now=clock,
                         **kwargs)


def test_a_token_names_its_key_and_expires():
    clock = Clock()
    auth = _auth(clock, key_id="k7")
    issued = auth.issue("alice")
    assert issued.token.startswith("k7.")
    assert issued.expires_at.timestamp() == clock.now + 3600
    assert auth.caller(f"Bearer {issued.token}").player_id == "alice"
    clock.now += 3600
    with pytest.raises(AuthError) as refused:
        auth.caller(f"Bearer {issued.token}")
    assert (refused.value.status, refused.value.code) == (401, "token_expired")


def test_rotation_keeps_old_tokens_valid_until_their_key_is_dropped():
    clock = Clock()
    before = _auth(clock, key_id="k1")
    old = before.player_token("bob")
    rotated = Authenticator("new-key", "operator-secret", key_id="k2",
                            previous_keys={"k1": "current-key"}, now=clock)
    assert rotated.caller(f"Bearer {old}").player_id == "bob"
    assert rotated.player_token("bob").startswith("k2.")
    dropped = Authenticator("new-key", "operator-secret", key_id="k2", now=clock)
    with pytest.raises(AuthError, match="unknown or retired key"):
        dropped.caller(f"Bearer {old}")


def test_a_token_cannot_borrow_another_key_id_or_be_altered():
    clock = Clock()
    auth = _auth(clock, key_id="k2", previous_keys={"k1": "old-key"})
    token = auth.player_token("carol")
    forged_kid = "k1." + token.partition(".")[2]
    for bad in (forged_kid, token[:-2] + "xx", "k2.e30.abc", "nokey", ""):
        with pytest.raises(AuthError) as refused:
            auth.caller(f"Bearer {bad}")
        assert refused.value.status == 401


def test_a_minted_token_under_the_development_key_fails_against_a_real_key():
    clock = Clock()
    minted = Authenticator(DEVELOPMENT_SECRETS["player_token_secret"], "o", now=clock)
    real = Authenticator(OWN["player_token_secret"], "o", now=clock)
    with pytest.raises(AuthError):
        real.caller(f"Bearer {minted.player_token('bob')}")


@pytest.mark.parametrize("package", ["services.wallet", "services.dealer_event"])
def test_a_service_process_refuses_to_start_on_development_secrets(package, tmp_path):
    """The worker exits before it touches Kafka, naming the variables to set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CROUPIER_")}
    env.update(CROUPIER_ENV="production", CROUPIER_HOME=str(tmp_path),
               KAFKA_BOOTSTRAP_SERVERS="127.0.0.1:1", CROUPIER_OPERATOR_TOKEN=OWN["operator_token"])
    done = subprocess.run([sys.executable, "-m", package, "worker"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "CROUPIER_TABLE_SIGNING_SECRET" in done.stderr
    assert "CROUPIER_PLAYER_TOKEN_SECRET" in done.stderr
    assert "CROUPIER_TABLE_EVENTS_KEY" in done.stderr
    assert "CROUPIER_OPERATOR_TOKEN" not in done.stderr


def test_a_header_with_bytes_that_are_not_utf8_is_a_401_not_a_500():
    """Issue 11 finding 9: aiohttp hands such bytes over as surrogates."""
    auth = _auth(Clock())
    for header in ("Bearer \udcff\udcfe", "Bearer caf\u00e9", "Bearer k1.\udc80abc"):
        with pytest.raises(AuthError) as refused:
            auth.caller(header)
        assert refused.value.status == 401
