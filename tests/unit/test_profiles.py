"""Table profiles: the six shipped files load, and a broken profile is refused by name."""

import copy

import pytest

from shared.profile import (
    BaccaratProfile,
    ProfileError,
    TripleFaceProfile,
    UnknownProfileError,
    list_profiles,
    load_profile,
    parse_profile,
)

SHIPPED = {
    "sbo-baccarat": {"player", "banker", "tie", "player_pair", "banker_pair",
                     "dragon_bonus_player", "dragon_bonus_banker", "fortune_six"},
    "sbo-super-six": {"player", "banker", "tie", "player_pair", "banker_pair", "super_six"},
    "sbo-tiger": {"player", "banker", "tie", "player_pair", "banker_pair", "tiger", "big_tiger",
                  "small_tiger", "tiger_tie", "tiger_pair"},
    "baccarat-big-small": {"player", "banker", "tie", "player_pair", "banker_pair", "big",
                           "small"},
    "triple-face-id": {"win", "lose", "tie", "three_knights", "pair_plus"},
    "triple-face-jp": {"win", "lose", "tie", "pair_plus"},
}


def test_shipped_profiles_and_their_bets():
    assert set(list_profiles()) == set(SHIPPED)
    for name, bets in SHIPPED.items():
        profile = load_profile(name)
        assert profile.name == name and set(profile.bets) == bets
        assert profile.betting_window_seconds == 30
        for code in profile.offered_currencies() or ("IDR",):
            limits = profile.limits_in(code)
            assert limits is not None and set(limits.bets) == bets
            assert all(0 < spec.min_stake <= spec.max_stake for spec in limits.bets.values())


def test_profile_settings_from_the_seeds():
    sbo = load_profile("sbo-baccarat")
    assert isinstance(sbo, BaccaratProfile)
    assert (sbo.decks, sbo.banker_mode, sbo.shoe_start_burn, sbo.burn_per_round) == (
        8, "commission", False, 0)
    assert (sbo.bets["banker"].pays["win"].num, sbo.bets["banker"].pays["win"].den) == (19, 20)
    big_small = load_profile("baccarat-big-small")
    assert (big_small.shoe_start_burn, big_small.burn_per_round) == (True, 1)
    assert load_profile("sbo-super-six").bets["banker"].pays["win_on_6"].fraction == 0.5
    assert load_profile("sbo-tiger").banker_mode == "no_commission"
    tf_id, tf_jp = load_profile("triple-face-id"), load_profile("triple-face-jp")
    assert isinstance(tf_id, TripleFaceProfile)
    assert (tf_id.decks, tf_id.procedure, tf_id.burn_per_round) == (1, "fixed", 4)
    assert (tf_jp.procedure, tf_jp.burn_per_round) == ("first_card", 0)


def test_unknown_profile_lists_the_known_ones():
    with pytest.raises(UnknownProfileError) as err:
        load_profile("punto")
    assert "'punto'" in str(err.value) and "sbo-baccarat" in str(err.value)


def _raw(name: str) -> dict:
    return copy.deepcopy(load_profile(name).model_dump(mode="json"))


@pytest.mark.parametrize(
    ("name", "change", "message"),
    [("sbo-baccarat", lambda p: p["bets"].update(dragon={"min_stake": 1, "max_stake": 2,
                                                         "pays": {}}), "dragon"),
     ("sbo-baccarat", lambda p: p["bets"]["banker"]["pays"].pop("win"), "banker"),
     ("sbo-baccarat", lambda p: p.update(banker_mode="no_commission"), "win_on_6"),
     ("sbo-super-six", lambda p: p["bets"]["banker"]["pays"].pop("win_on_6"), "win_on_6"),
     ("sbo-baccarat", lambda p: p["bets"]["tie"].update(min_stake=10, max_stake=5), "min_stake"),
     ("sbo-baccarat", lambda p: p["bets"]["tie"]["pays"]["win"].update(num=8.0), "num"),
     ("sbo-baccarat", lambda p: p.update(decks=9), "decks"),
     ("sbo-baccarat", lambda p: p.update(cut_card_from_end=2), "cut_card"),
     ("triple-face-id", lambda p: p.update(decks=2), "decks"),
     ("triple-face-id", lambda p: p.update(procedure="swirl"), "procedure"),
     ("triple-face-id", lambda p: p["bets"].update(
         banker={"min_stake": 1, "max_stake": 2, "pays": {"win": {"num": 1, "den": 1}}}),
      "banker"),
     ("sbo-baccarat", lambda p: p.update(game="roulette"), "game")],
)
def test_invalid_profiles_are_refused(name, change, message):
    raw = _raw(name)
    change(raw)
    with pytest.raises(ProfileError, match=message):
        parse_profile(raw)
