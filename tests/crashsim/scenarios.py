"""Issue 17's scenarios on today's wallet: each as a crafted schedule (the issue's own
story, step by step) and as a seed search with the explorer's schedules weighted towards it.
`python -m tests.crashsim.scenarios` prints every reproducer (docs/decisions/crash-simulator.md
shows them)."""

from __future__ import annotations

from dataclasses import dataclass

from tests.crashsim.explorer import Config, Result, Step, replay, search, shrink

ACCOUNTS = "wallet-accounts-changelog"
TX_IDS = "wallet-tx-ids-changelog"
BETS = "wallet-bets-changelog"
HISTORY = "wallet-transactions-changelog"
# the cut points of one batch of a single EndBet that pays (four table writes, then the
# command applied, then the outputs sent, acked, ...) and of a single new bet (five writes)
PAYOUT_OUTPUTS_ACKED = 7
BET_OUTPUTS_ACKED = 8
REFUND_APPLIED = 15  # a batch of a payout, its reversal and the refund: the third applied
OPEN: list[Step] = [("create", "p0"), ("deposit", "p0", "d0", 1_000_000)]
# a clean take-over of the killed w0's partition (the changelog's latest values), whose
# redelivered command is found in `recent` and writes nothing, then 16 more movements push
# it out of `recent`
TAKE_OVER: list[Step] = [
    ("move", 0, "w1", False), ("process", "w1", 0, 1, None, 0),
    *[("deposit", "p0", f"d{i}", 500) for i in range(1, 17)], ("process", "w1", 0, 16, None, 0)]


def weighted(**weights: float) -> tuple[tuple[str, float], ...]:
    return tuple({**dict(Config().weights), **weights}.items())


@dataclass(frozen=True)
class Scenario:
    title: str
    broken: tuple[str, ...]  # what the crafted schedule breaks (all of them)
    steps: list[Step]
    search_for: str  # the invariant the seed search stops at
    config: Config


SCENARIOS: dict[str, Scenario] = {
    "1": Scenario(
        "A restarted worker is ahead of its changelog, and the gap becomes permanent",
        ("served_balance_is_not_ledger", "changelog_balance_is_not_ledger",
         "history_overwritten", "balance_chain"),
        [*OPEN, ("bet", "p0", "b0", 2_500), ("process", "w0", 0, 3, None, 0),
         ("end", "b0", "settled", 3_000),
         # the payout, its tx-ids entry, the settled bet and the account are in RocksDB,
         # the wallet.transactions record is acked; the accounts changelog record is lost
         ("process", "w0", 0, 1, PAYOUT_OUTPUTS_ACKED, {ACCOUNTS: 0}),
         ("restart", "w0", False),
         ("process", "w0", 0, 1, None, 0),  # redelivered, found in `recent`: nothing written
         ("move", 0, "w1", False),  # the new owner recovers the old account
         ("bet", "p0", "b1", 1_000),  # takes seq 3 again
         ("process", "w1", 0, 1, None, 0),
         ("redeliver", "b0"),  # its tx-ids entry says "applied": nothing repairs it
         ("process", "w1", 0, 1, None, 0)],
        "history_overwritten",
        Config(players=1, wipe=0.0, kill=0.4, weights=weighted(move=2))),
    "2": Scenario(
        "A lost idempotency record pays twice",
        ("tx_applied_twice", "credits_are_not_endings"),
        [*OPEN, ("bet", "p0", "b0", 500), ("process", "w0", 0, 3, None, 0),
         ("end", "b0", "settled", 3_000),
         ("process", "w0", 0, 1, PAYOUT_OUTPUTS_ACKED, {TX_IDS: 0}),  # the payout's tx-ids lost
         *TAKE_OVER,  # the account (the payout in `recent`) and the bet kept
         ("redeliver", "b0"),  # a void after settlement re-publishes the settlements
         ("process", "w1", 0, 1, None, 0)],
        "tx_applied_twice",
        Config(players=1, kill=0.4, steps=80, weights=weighted(deposit=4, redeliver=2, move=1.5))),
    "2b": Scenario(
        "A retried bet whose stake_debit index was lost is debited twice and answered 200",
        ("bet_debited_twice", "tx_applied_twice", "retry_answer_differs"),
        [*OPEN, ("process", "w0", 0, 2, None, 0),
         ("bet", "p0", "b0", 2_500),
         ("process", "w0", 0, 1, BET_OUTPUTS_ACKED, {TX_IDS: 0}),  # the debit's tx-ids lost
         *TAKE_OVER,
         ("retry", "bet:p0:b0"),  # the player never got the first answer (w0 died)
         ("process", "w1", 0, 1, None, 0)],
        "bet_debited_twice",
        Config(players=1, kill=0.4, steps=80, weights=weighted(deposit=4, retry=3, move=1.5))),
    "3": Scenario(
        "A lost bet status: the annulment's reversal is refused, its refund paid",
        ("payout_kept_and_stake_refunded", "wallet_breach:reversal_of_unsettled_bet",
         "credits_are_not_endings", "input_lost"),
        [*OPEN, ("bet", "p0", "b0", 500), ("process", "w0", 0, 3, None, 0),
         ("end", "b0", "settled", 3_000),
         ("process", "w0", 0, 1, PAYOUT_OUTPUTS_ACKED, {BETS: 0}),  # "settled" not in the log
         ("restart", "w0", False),
         ("process", "w0", 0, 1, None, 0),  # redelivered: settled in its store, nothing written
         ("move", 0, "w1", False),  # the new owner sees the bet `placed`
         ("annul", "b0"),
         ("process", "w1", 0, 2, None, 0)],
        "payout_kept_and_stake_refunded",
        Config(players=1, wipe=0.0, kill=0.4, weights=weighted(annul=4, move=2, redeliver=0))),
    "4": Scenario(
        "Faust commits past a record nobody processed",
        ("input_lost", "credits_are_not_endings", "bet_status_is_not_ending"),
        [*OPEN, ("bet", "p0", "b0", 500), ("process", "w0", 0, 3, None, 0),
         ("end", "b0", "voided", 500),
         ("move", 0, "w1", True)],  # the ending dropped around the rebalance, acked, committed
        "input_lost",
        Config(kill=0.0, drop=1.0, weights=weighted(move=2))),  # no kills: only drops lose input
    "5": Scenario(
        "Beyond the issue: a bet status ahead of its account refuses the redelivered "
        "settlement, whose payout never reaches the ledger (no store-ahead needed)",
        ("input_lost", "balance_chain", "served_balance_is_not_ledger",
         "changelog_balance_is_not_ledger", "wallet_breach:bet_ended_twice"),
        [*OPEN, ("bet", "p0", "b0", 1_000), ("process", "w0", 0, 3, None, 0),
         ("end", "b0", "settled", 2_000), ("annul", "b0"),
         # payout, reversal, refund applied in one batch; before its outputs are sent the
         # kill keeps the bet's last status ("voided") and every tx-ids entry, but not the
         # refund's account write nor its history record
         ("process", "w0", 0, 3, REFUND_APPLIED, {ACCOUNTS: 2, HISTORY: 2}),
         ("restart", "w0", True),  # an empty disk: the changelog is all there is
         ("process", "w0", 0, 3, None, 0)],  # the settlement refused "already ended voided"
        "input_lost",
        Config(kill=0.3, wipe=1.0, weights=weighted(move=0))),
    "6": Scenario(
        "Beyond the issue: with no fault at all, a settlement re-published after its "
        "annulment is flagged as a money breach (bet_ended_twice); the money is right",
        ("wallet_breach:bet_ended_twice",),
        [*OPEN, ("bet", "p0", "b0", 1_000), ("process", "w0", 0, 3, None, 0),
         ("end", "b0", "settled", 2_000), ("annul", "b0"), ("process", "w0", 0, 3, None, 0),
         ("redeliver", "b0"), ("process", "w0", 0, 3, None, 0)],
        "wallet_breach:bet_ended_twice",
        Config(kill=0.0, drop=0.0, weights=weighted(move=0, restart=0))),
}
SEEDS = range(3000)


def crafted(name: str) -> Result:
    scenario = SCENARIOS[name]
    return replay(scenario.steps, scenario.config)


def searched(name: str) -> Result | None:
    scenario = SCENARIOS[name]
    return search(scenario.search_for, SEEDS, scenario.config)


def main() -> None:
    for name, scenario in SCENARIOS.items():
        print(f"## Scenario {name}: {scenario.title}\n\ncrafted:\n")
        print(crafted(name).reproducer(most=8))
        found = searched(name)
        print(f"\nsearched ({scenario.search_for}):\n")
        if found is None:
            print(f"not found in seeds {SEEDS.start}..{SEEDS.stop - 1}")
        else:
            print(shrink(found, scenario.search_for, scenario.config).reproducer(most=8))
        print()


if __name__ == "__main__":
    main()
