"""What must hold after a schedule, read from the topics alone (plus what the players were
answered and what bet-settlement decided, both of which a real check has too: the HTTP
clients' logs and bet-settlement's topics).

The ledger is `wallet.transactions` as written: a record is a copy of an earlier one
(a duplicate command re-publishes its records) when its tx id, amount and balance after are
the same; a record with a known tx id and another balance after is that movement applied a
second time, reported (`tx_applied_twice`) and counted, because the ledger is the records.

Invariant names (a failure is `(name, detail)`):
- `balance_chain`: each movement's balance after is the previous one's plus its amount.
- `tx_applied_twice`: a tx id applied under two seqs.
- `served_balance_is_not_ledger`: the balance the partition's owner serves (its store)
  is not the sum of the player's ledger.
- `changelog_balance_is_not_ledger`: the balance a worker taking the partition over would
  recover (the accounts changelog) is not the sum of the ledger.
- `history_overwritten`: one `transactions` key (`<player>:<seq>`) was written with two
  tx ids: a seq taken twice.
- `bet_debited_twice`, `bet_debit_missing`: a funded bet (a BetPlaced on `bets.placed`)
  has more or fewer than one stake debit.
- `credits_are_not_endings`: a bet's refund, payout and reversal are not what
  bet-settlement's endings said.
- `payout_kept_and_stake_refunded`: of those, an annulled bet whose payout was not
  reversed while its stake was refunded.
- `bet_status_is_not_ending`: the bet's status on the `bets` changelog is not its ending.
- `input_lost`: a deposit or an ending on the commands topic whose movement is not in the
  ledger.
- `retry_answer_differs`: a request answered with success, then otherwise (or with
  another transaction or balance) on a retry; or answered with a movement other than the
  ledger's first one of its tx id (what its first attempt earned).
- `command_failed`: the wallet answered a command 500.
- `wallet_breach:<name>`: the wallet flagged a money breach of its own (`breach=`).
"""

from __future__ import annotations

from typing import Any

from croupier.services.wallet.commands import Deposit, EndBet, ReverseSettlement
from croupier.services.wallet.handlers import Answer
from tests.crashsim.old_wallet import (
    COMMANDS,
    PLACED,
    TRANSACTIONS,
    Sim,
    changelog,
    partition_of,
)

Failure = tuple[str, str]
STATUS = {"rejected": "rejected", "settled": "settled", "voided": "voided",
          "annulled": "voided"}


def check(sim: Sim) -> list[Failure]:
    failures: list[Failure] = []
    kafka = sim.kafka
    world = sim.world
    world.read_bets()
    moves: dict[str, dict[str, list[Any]]] = {}  # player -> tx id -> distinct movements
    total: dict[str, int] = {}
    last: dict[str, int] = {}
    for partition in range(sim.partitions):
        for offset, _key, tx in kafka.read(TRANSACTIONS, partition):
            player = tx.player_id
            mine = moves.setdefault(player, {})
            same = mine.setdefault(tx.tx_id, [])
            if any(t.amount == tx.amount and t.balance_after == tx.balance_after for t in same):
                continue  # a copy, re-published
            if same:
                failures.append(("tx_applied_twice",
                                 f"{tx.tx_id} of {player} again at offset {offset}: balance "
                                 f"after {same[0].balance_after}, then {tx.balance_after}"))
            same.append(tx)
            before = last.get(player, 0)
            if tx.balance_after != before + tx.signed_amount:
                failures.append(("balance_chain",
                                 f"{tx.tx_id} of {player} at offset {offset}: {before} "
                                 f"{tx.signed_amount:+d} is not {tx.balance_after}"))
            last[player] = tx.balance_after
            total[player] = total.get(player, 0) + tx.signed_amount
    _balances(sim, total, failures)
    _history(sim, failures)
    _bets(sim, moves, failures)
    for partition in range(sim.partitions):
        for offset, _key, env in kafka.read(COMMANDS, partition):
            moved = _movement_of(env.command)
            if moved is not None and moved not in moves.get(env.command.player_id, {}):
                failures.append(("input_lost", f"{moved} of {env.command.player_id} "
                                               f"(commands offset {offset}) is not in the ledger"))
    for key, answers in world.answers.items():
        _answers(key, answers, moves.get(world.requests[key].command.player_id, {}), failures)
    failures.extend((f"wallet_breach:{name}", f"{env.command.type} of "
                     f"{env.command.player_id} {getattr(env.command, 'bet_id', '')}")
                    for name, env in sim.breaches)
    return failures


def _movement_of(cmd: Any) -> str | None:
    """The tx id a command on the commands topic must have moved, if it moves money
    whatever the account holds (a bet may be refused; a deposit, an ending may not)."""
    if isinstance(cmd, Deposit):
        return f"deposit:{cmd.request_id}"
    if isinstance(cmd, EndBet) and cmd.returned > 0:
        if cmd.ending == "settled":
            return f"payout:{cmd.settlement_id}"
        return f"bet_refund:{cmd.bet_id}"
    if isinstance(cmd, ReverseSettlement) and cmd.amount > 0:
        return f"payout_reversal:{cmd.reversal_id}"
    return None


def _balances(sim: Sim, total: dict[str, int], failures: list[Failure]) -> None:
    kafka = sim.kafka
    players = {key.split(":", 1)[1] for key in sim.world.requests if key.startswith("create:")}
    for player in sorted(players):
        partition = partition_of(player, sim.partitions)
        ledger = total.get(player, 0)
        owner = sim.workers[sim.owner[partition]]
        served = owner.slot("accounts", partition)["data"].get(player)
        if served is not None and served["balance"] != ledger:
            failures.append(("served_balance_is_not_ledger",
                             f"{player}: ledger {ledger:,}, balance {served['balance']:,} "
                             f"(tx_count {served['tx_count']}) on {owner.name}"))
        logged = kafka.latest(changelog("accounts"), partition).get(player)
        if logged is not None and logged["balance"] != ledger:
            failures.append(("changelog_balance_is_not_ledger",
                             f"{player}: ledger {ledger:,}, balance {logged['balance']:,} "
                             f"(tx_count {logged['tx_count']}) in the accounts changelog"))


def _history(sim: Sim, failures: list[Failure]) -> None:
    for partition in range(sim.partitions):
        seen: dict[str, str] = {}
        for offset, key, tx in sim.kafka.read(changelog("transactions"), partition):
            first = seen.setdefault(key, tx["tx_id"])
            if first != tx["tx_id"]:
                failures.append(("history_overwritten", f"{key}: {first}, then {tx['tx_id']} "
                                                        f"(offset {offset})"))
                seen[key] = tx["tx_id"]


def _bets(sim: Sim, moves: dict[str, dict[str, list[Any]]], failures: list[Failure]) -> None:
    world = sim.world
    statuses: dict[str, Any] = {}
    for partition in range(sim.partitions):
        statuses.update(sim.kafka.latest(changelog("bets"), partition))
    seen: set[str] = set()
    for _offset, _key, placed in sim.kafka.read(PLACED, 0):
        if placed.bet_id in seen:
            continue  # a copy, re-published
        seen.add(placed.bet_id)
        bet_id, player, stake = placed.bet_id, placed.player_id, placed.stake
        mine = moves.get(player, {})
        debits = len(mine.get(f"stake_debit:{bet_id}", []))
        if debits != 1:
            failures.append(("bet_debited_twice" if debits > 1 else "bet_debit_missing",
                             f"{bet_id} of {player}: {debits} stake debits"))
        ending, returned = world.decided.get(bet_id, (None, 0))
        want = {"bet_refund": stake if ending in ("rejected", "voided", "annulled") else 0,
                "payout": returned if ending in ("settled", "annulled") else 0,
                "payout_reversal": returned if ending == "annulled" else 0}
        cause = {"bet_refund": bet_id, "payout": f"settle:{bet_id}",
                 "payout_reversal": f"reverse:settle:{bet_id}"}
        got = {kind: sum(t.amount for t in mine.get(f"{kind}:{cause[kind]}", []))
               for kind in want}
        if got != want:
            failures.append(("credits_are_not_endings",
                             f"{bet_id} of {player} ({ending} {returned:,}, stake {stake:,}): "
                             f"endings say {_moves(want)}, ledger has {_moves(got)}"))
            if ending == "annulled" and returned and got == {**want, "payout_reversal": 0}:
                failures.append(("payout_kept_and_stake_refunded",
                                 f"{bet_id} of {player}: payout {returned:,} never reversed, "
                                 f"stake {stake:,} refunded"))
        record = statuses.get(f"{player}:{bet_id}")
        status = record["status"] if record else None
        if ending is not None and status != STATUS[ending]:
            failures.append(("bet_status_is_not_ending",
                             f"{bet_id} of {player}: {ending}, the bets changelog says "
                             f"{status}"))


def _moves(amounts: dict[str, int]) -> str:
    return ", ".join(f"{kind} {amount:,}" for kind, amount in amounts.items() if amount) \
        or "nothing"


def _answers(key: str, answers: list[Answer], moves: dict[str, list[Any]],
             failures: list[Failure]) -> None:
    """A success says which movement the request made: the ledger's first one of that tx
    id (its first attempt's, whether or not that attempt's answer reached the player);
    and a request answered with success is answered so again."""
    first = None
    for answer in answers:
        if answer.status >= 500:
            failures.append(("command_failed", f"{key}: {answer.status} {answer.body}"))
            continue
        gist = _gist(answer)
        if gist[0] == "moved":
            earned = moves.get(gist[1])
            if earned and earned[0].balance_after != gist[2]:
                failures.append(("retry_answer_differs",
                                 f"{key}: answered {answer.status} with {gist[1]} at balance "
                                 f"{gist[2]:,}; the ledger applied it first at "
                                 f"{earned[0].balance_after:,}"))
        if first is None:
            if answer.status < 300:
                first = answer
            continue
        if _gist(answer) != _gist(first):
            failures.append(("retry_answer_differs",
                             f"{key}: first {first.status} {_gist(first)}, then "
                             f"{answer.status} {_gist(answer)}"))


def _gist(answer: Answer) -> tuple[Any, ...]:
    """What a success answer says happened: the transaction and the balance after."""
    body = answer.body
    if answer.status >= 300:
        return ("refused", body.get("error", {}).get("code"))
    if "transaction" in body:
        return ("moved", body["transaction"]["tx_id"], body["balance"])
    if "debit_tx_id" in body:
        return ("moved", body["debit_tx_id"], body["balance_after"])
    return ("ok",)  # an account created (a retry answers today's balance)
