"""`croupier evaluate` and `croupier rtp` through the CLI, for all six profiles."""

import json

import pytest
import typer
from typer.testing import CliRunner

from services.cli import evaluate_cmd, rtp_cmd

app = typer.Typer()
evaluate_cmd.register(app)
rtp_cmd.register(app)
runner = CliRunner()

ROUNDS = {
    "sbo-baccarat": ("AS,3H,2D,3C,9S,KD", ["--bet", "banker=1000", "--bet", "fortune_six=100"]),
    "sbo-super-six": ("AS,3H,2D,3C,9S", ["--bet", "banker=1000", "--bet", "super_six=100"]),
    "sbo-tiger": ("AS,3H,2D,3C,9S", ["--bet", "small_tiger=100", "--bet", "tiger_pair=100"]),
    "baccarat-big-small": ("AS,3H,2D,3C,9S", ["--bet", "big=100", "--bet", "small=100"]),
    "triple-face-id": ("JS,2C,3C,QS,3H,4C,5C,TH,6D,7C,8C,9D",
                       ["--bet", "tie:1=100", "--bet", "three_knights:2=100",
                        "--bet", "pair_plus:banker=100"]),
    "triple-face-jp": ("5H,JS,2C,3C,QS,3H,4C,5C,TH,6D,7C,8C,9D",
                       ["--bet", "win:2=500", "--bet", "pair_plus:banker=100"]),
}


def _run(*args: str):
    return runner.invoke(app, list(args))


@pytest.mark.parametrize("profile", list(ROUNDS))
def test_evaluate_json_shape(profile):
    cards, bets = ROUNDS[profile]
    result = _run("evaluate", "--profile", profile, "--cards", cards, *bets, "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    baccarat = not profile.startswith("triple")
    keys = {"profile", "hands", "points" if baccarat else "ranks", "winner", "surplus", "bets"}
    assert set(out) == keys and out["profile"] == profile
    names = ["player", "banker"] if baccarat else ["player1", "player2", "player3", "banker"]
    assert list(out["hands"]) == names
    for bet in out["bets"]:
        assert set(bet) == {"bet", "position", "stake", "outcome", "returned"}
        assert isinstance(bet["returned"], int)


def test_evaluate_values():
    cards, bets = ROUNDS["sbo-baccarat"]
    out = json.loads(_run("evaluate", "--profile", "sbo-baccarat", "--cards", cards, *bets,
                          "--json").output)
    assert out["hands"] == {"player": ["AS", "2D", "9S"], "banker": ["3H", "3C"]}
    assert out["points"] == {"player": 2, "banker": 6} and out["winner"] == "banker"
    assert out["surplus"] == ["KD"]
    assert out["bets"] == [
        {"bet": "banker", "position": None, "stake": 1000, "outcome": "win", "returned": 1950},
        {"bet": "fortune_six", "position": None, "stake": 100, "outcome": "win", "returned": 1300},
    ]
    tf = json.loads(_run("evaluate", "--profile", "triple-face-id", "--cards",
                         ROUNDS["triple-face-id"][0], "--bet", "tie:1=100", "--json").output)
    assert tf["ranks"]["player1"] == tf["ranks"]["banker"] == "P9"
    assert tf["winner"]["player1"] == "tie"
    assert tf["bets"][0] == {"bet": "tie", "position": 1, "stake": 100, "outcome": "win",
                             "returned": 900}
    jp = json.loads(_run("evaluate", "--profile", "triple-face-jp", "--cards",
                         ROUNDS["triple-face-jp"][0], "--json").output)
    assert jp["hands"]["banker"] == ["JS", "3H", "6D"]  # first card 5: Banker first
    assert jp["hands"]["player1"] == ["2C", "4C", "7C"]


@pytest.mark.parametrize("profile", list(ROUNDS))
def test_evaluate_human_output(profile):
    cards, bets = ROUNDS[profile]
    result = _run("evaluate", "--profile", profile, "--cards", cards, *bets)
    assert result.exit_code == 0 and "banker" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--profile", "nope", "--cards", "AS"], "unknown profile 'nope'"),
     (["--profile", "sbo-baccarat", "--cards", "AS,1X,2D,3C"], "'1X'"),
     (["--profile", "sbo-baccarat", "--cards", "AS,2D,3C"], "too few cards"),
     (["--profile", "triple-face-id", "--cards", "JS,JS,2C,3C,QS,3H,4C,5C,TH,6D,7C,8C"],
      "duplicate card JS"),
     (["--profile", "sbo-baccarat", "--cards", "9S,2D,TC,4D", "--bet", "dragon=5"],
      "unknown bet 'dragon'"),
     (["--profile", "sbo-baccarat", "--cards", "9S,2D,TC,4D", "--bet", "super_six=5"],
      "not offered"),
     (["--profile", "triple-face-id", "--cards", ROUNDS["triple-face-id"][0],
       "--bet", "win:banker=5"], "position"),
     (["--profile", "triple-face-id", "--cards", ROUNDS["triple-face-id"][0],
       "--bet", "win:7=5"], "bad position '7'"),
     (["--profile", "sbo-baccarat", "--cards", "9S,2D,TC,4D", "--bet", "banker=1.5"],
      "bad stake")],
)
def test_evaluate_errors_exit_2_with_one_line(args, message):
    result = _run("evaluate", *args)
    assert result.exit_code == 2
    assert message in result.output and result.output.count("\n") == 1


@pytest.mark.parametrize("profile", list(ROUNDS))
def test_rtp_json_shape(profile):
    result = _run("rtp", "--profile", profile, "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert set(out) == {"profile", "bets"} and out["profile"] == profile
    for entry in out["bets"].values():
        assert set(entry) == {"rtp", "house_edge", "rtp_exact", "outcomes"}
        p, q = map(int, entry["rtp_exact"].split("/"))
        assert entry["rtp"] == pytest.approx(p / q) and entry["house_edge"] == pytest.approx(
            1 - p / q)


def test_rtp_simulate_and_human_output():
    result = _run("rtp", "--profile", "sbo-super-six", "--simulate", "500", "--seed", "3",
                  "--json")
    out = json.loads(result.output)
    assert out["simulation"]["rounds"] == 500 and set(out["simulation"]["bets"]) == set(
        out["bets"])
    human = _run("rtp", "--profile", "triple-face-id", "--simulate", "200")
    assert human.exit_code == 0 and "pair_plus" in human.output
    assert _run("rtp", "--profile", "nope").exit_code == 2
    assert _run("rtp", "--profile", "sbo-tiger", "--simulate", "0").exit_code == 2


def test_main_app_registers_the_commands():
    pytest.importorskip("services.cli.kafka_cmd")
    pytest.importorskip("services.cli.topics_cmd")
    from services.cli.main import app as croupier

    names = {command.name for command in croupier.registered_commands}
    assert {"evaluate", "rtp"} <= names
