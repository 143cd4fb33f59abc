"""The wallet's own view of each table's rounds, folded from `table.events`.

It lets the wallet refuse a bet fast (unknown table or round, round closed,
bet not offered, bad position, limits) before any money moves. It is advisory:
bet-settlement makes the binding decision, and a bet that raced the close is
rejected there and refunded.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from shared.bets import GAME_RULES, MAIN_BETS, TIGER_SIGN
from shared.events.event_auth import (
    ChainHead,
    TableEventRefused,
    TableFlagged,
    TableWatch,
    Verdict,
    advance,
)
from shared.events.ids import id_problem
from shared.events.table import RoundOpened, TableEventBase
from shared.profile import AnyProfile, CurrencyLimits, ProfileError, round_profile
from shared.round_phase import RoundPhase, accepts_bets, betting_status, phase_after
from shared.settlement import Bet, BetError, needs_main_bet, validate_bet
from shared.shoe_history import ShoeHistory, find_shoe, fold_shoes, shoe_roads

KEEP_ROUNDS = 100  # per table: the view stays a few KB, whatever the table's history


class KnownRound(BaseModel):
    model_config = ConfigDict(frozen=True)

    round_id: str
    # shared.round_phase's fold; players' clients read it in the wallet's public words
    # (`betting_status`: open, closed, completed, voided, annulled)
    phase: RoundPhase
    profile: str
    profile_version: int | None = None  # as the round opened (None: an older record, v1)
    betting_closes_at: datetime
    seq: int


class TableRounds(BaseModel):
    model_config = ConfigDict(frozen=True)

    table_id: str
    last_seq: int = 0
    last_hash: str | None = None  # of the last authentic event folded (None: none yet)
    current_round: str | None = None
    rounds: dict[str, KnownRound] = {}
    # why the table is flagged (an event refused as forged, altered, unsigned or out of
    # order): no bet is taken on it until an authentic `table_reopened`
    flagged: str | None = None
    # the hashes of the latest void events (event_auth.ChainHead.void_tips, bounded)
    void_tips: tuple[str, ...] = ()
    # the table's last few shoes and their results, for its roads (bounded:
    # shared.shoe_history)
    shoes: tuple[ShoeHistory, ...] = ()


def fold(view: TableRounds | None, event: TableEventBase) -> TableRounds:
    """The view after one table event; events already seen (seq) change nothing."""
    view = view or TableRounds(table_id=event.table_id)
    if event.seq <= view.last_seq:
        return view
    rounds = dict(view.rounds)
    current = view.current_round
    if isinstance(event, RoundOpened):
        rounds[event.round_id] = KnownRound(round_id=event.round_id, phase="betting",
                                           profile=event.profile,
                                           profile_version=event.profile_version,
                                           betting_closes_at=event.betting_closes_at,
                                           seq=event.seq)
        current = event.round_id
        if len(rounds) > KEEP_ROUNDS:
            for old in sorted(rounds, key=lambda r: rounds[r].seq)[:len(rounds) - KEEP_ROUNDS]:
                del rounds[old]
    elif (round_id := getattr(event, "round_id", None)) in rounds:
        info = rounds[round_id]
        phase = phase_after(info.phase, event)
        if phase != info.phase:
            rounds[round_id] = info.model_copy(update={"phase": phase})
    return view.model_copy(update={"last_seq": event.seq, "rounds": rounds,
                                   "current_round": current,
                                   "shoes": fold_shoes(view.shoes, event)})


def fold_verified(view: TableRounds | None, event: TableEventBase, key: bytes,
                  accept_unsigned: bool = False
                  ) -> tuple[TableRounds, TableEventRefused | None]:
    """The view after `event` once its HMAC and its place in the chain are checked, and
    the refusal when it was refused (the view is then flagged and folds nothing of it).
    The first event seen of a table (the view starts an hour back) is its anchor."""
    after, refused, _ = fold_checked(view, event, key, accept_unsigned)
    return after, refused


def fold_checked(view: TableRounds | None, event: TableEventBase, key: bytes,
                 accept_unsigned: bool = False
                 ) -> tuple[TableRounds, TableEventRefused | None, Verdict | None]:
    """`fold_verified`, and the verdict (None: refused): "apply" folded it; "seen" (a
    redelivery) and "void" (a lost race, docs/decisions/dealer-fencing.md) left the view
    as it was (a void event only becomes one of its void tips)."""
    view = view or TableRounds(table_id=event.table_id)
    head = ChainHead(view.last_seq, view.last_hash, view.void_tips) \
        if view.last_hash is not None else None
    try:
        after, verdict = advance(TableWatch(head, view.flagged), event, key, accept_unsigned)
    except TableFlagged as flagged:
        return (view.model_copy(update={"flagged": flagged.watch.flagged}), flagged.refused,
                None)
    if verdict == "void":
        return view.model_copy(update={"void_tips": after.void_tips}), None, verdict
    if verdict != "apply":
        return view, None, verdict
    folded = fold(view.model_copy(update={"last_seq": event.seq - 1}), event)
    return (folded.model_copy(update={"last_hash": event.hash, "flagged": after.flagged}),
            None, verdict)


class BetRefused(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def check_round_takes_bet(view: TableRounds | None, *, table_id: str, round_id: str, bet: str,
              position: int | str | None, stake: int, currency: str, now: datetime) -> None:
    """Raise BetRefused naming the first problem; return when the bet may be funded."""
    if view is None:
        raise BetRefused(404, "unknown_table", f"unknown table {table_id!r}")
    if view.flagged is not None:
        raise BetRefused(409, "table_flagged", f"table {table_id!r} takes no bets: it is "
                         "flagged for review (a table event was refused)")
    info = view.rounds.get(round_id)
    if info is None:
        raise BetRefused(404, "unknown_round", f"unknown round {round_id!r} on table {table_id!r}")
    if not accepts_bets(info.phase) or now >= info.betting_closes_at:
        raise BetRefused(409, "round_closed", f"betting on round {round_id!r} is closed "
                                              f"({betting_status(info.phase)})")
    try:
        profile = round_profile(info.profile, info.profile_version)
    except ProfileError as exc:
        raise BetRefused(503, "unknown_profile", str(exc)) from exc
    try:  # the limits in the player's currency; currency_not_offered when the table has none
        validate_bet(Bet(bet=bet, position=position, stake=stake), profile, currency)
    except BetError as exc:
        code = "bet_not_offered" if exc.code == "unknown_bet" else exc.code
        raise BetRefused(422, code, str(exc)) from exc


def opened_seq(view: TableRounds | None, round_id: str) -> int | None:
    """The seq of the round's RoundOpened (None: the view does not know the round)."""
    info = view.rounds.get(round_id) if view is not None else None
    return info.seq if info is not None else None


def round_rules(view: TableRounds | None, round_id: str, bet: str,
                currency: str) -> tuple[int | None, bool]:
    """What the agent checks against the player's own bets of the round: the table maximum
    on one spot (seed 002) in the player's `currency`, and whether this bet is a Tiger wager
    the table takes only with a main bet. (None, False) when the round or bet is unknown (the
    door refused already)."""
    info = view.rounds.get(round_id) if view is not None else None
    if info is None:
        return None, False
    try:
        profile = round_profile(info.profile, info.profile_version)
    except ProfileError:
        return None, False
    limits = profile.limits_in(currency)
    spec = limits.bets.get(bet) if limits is not None else None
    return (spec.max_stake if spec is not None else None), needs_main_bet(bet, profile)


def limits_body(profile: AnyProfile, currency: str | None) -> list[dict[str, Any]]:
    """The table's limits and chips as players see them, in minor units: in `currency` (the
    asking player's; empty when the table does not offer it), or in every currency the table
    offers when none is asked. A profile taking any currency with one set of limits shows
    them once, with `currency` null unless one was asked."""
    offered = profile.offered_currencies()
    asked: list[tuple[str | None, CurrencyLimits | None]]
    if currency is not None:
        asked = [(currency, profile.limits_in(currency))]
    elif offered is not None:
        asked = [(code, profile.limits_in(code)) for code in offered]
    else:  # any currency, the same limits: those of whichever it is
        asked = [(None, profile.limits_in(""))]
    body = []
    for code, limits in asked:
        if limits is None:
            continue
        body.append({"currency": code, "chips": list(limits.chips), "bets": {
            name: {"min_stake": spec.min_stake, "max_stake": spec.max_stake}
            for name, spec in limits.bets.items()}})
    return body


def current_round_body(view: TableRounds, currency: str | None = None) -> dict[str, Any] | None:
    """What a player needs to bet on the open round: ids, deadline, bets and limits (in the
    player's `currency` when it is given: `bets` carry those limits, `limits` every offered
    currency's when it is not)."""
    info = view.rounds.get(view.current_round or "")
    if info is None:
        return None
    profile = round_profile(info.profile, info.profile_version)
    limits = limits_body(profile, currency)
    one = limits[0]["bets"] if len(limits) == 1 else {}
    bets = {
        name: {"min_stake": one.get(name, {}).get("min_stake"),
               "max_stake": one.get(name, {}).get("max_stake"),
               "positions": list(GAME_RULES[profile.game][name].positions)}
        for name in profile.bets
    }
    offered = profile.offered_currencies()
    return {"table_id": view.table_id, "round_id": info.round_id,
            "status": betting_status(info.phase),
            "profile": info.profile, "game": profile.game,
            "betting_closes_at": info.betting_closes_at.isoformat(), "bets": bets,
            "currencies": list(offered) if offered is not None else None, "limits": limits,
            "restrictions": restrictions(profile)}


def restrictions(profile: AnyProfile) -> list[dict[str, Any]]:
    """The limits on who may place a bet that the table shows as a sign (seed 002, Tiger
    Baccarat: "... and will display a sign at the table when this applies")."""
    tiger = sorted(name for name in profile.bets if needs_main_bet(name, profile))
    if not tiger:
        return []
    return [{"code": "tiger_needs_main_bet", "bets": tiger, "requires_one_of": list(MAIN_BETS),
             "sign": TIGER_SIGN, "source": "seed 002, Tiger Baccarat"}]


def tables_body(views: dict[str, TableRounds], currency: str | None = None) -> dict[str, Any]:
    """`GET /tables`: every table the view holds, its newest round and shoe, by table id, with
    the limits and chips of the newest round's profile in `currency` (all when None)."""
    tables = []
    for table_id in sorted(views):
        view = views[table_id]
        info = view.rounds.get(view.current_round or "")
        try:
            profile = round_profile(info.profile, info.profile_version) if info else None
        except ProfileError:
            profile = None
        offered = profile.offered_currencies() if profile is not None else None
        tables.append({"table_id": table_id, "current_round": view.current_round,
                       "round_status": betting_status(info.phase) if info else None,
                       "profile": info.profile if info else None,
                       "shoe_id": view.shoes[-1].shoe_id if view.shoes else None,
                       "flagged": view.flagged,
                       "currencies": list(offered) if offered is not None else None,
                       "limits": limits_body(profile, currency) if profile is not None else []})
    return {"tables": tables}


def roads_body(view: TableRounds | None, table_id: str, wanted: str | None) -> dict[str, Any]:
    """`GET /tables/{id}/roads`: the roads of the current shoe, or of `wanted` (a shoe id, or
    how many shoes back: 0 the current one, 1 the one before). BetRefused names why not."""
    if wanted is not None and (problem := id_problem(wanted, "shoe")) is not None:
        raise BetRefused(422, "malformed_query", f"shoe: {problem}")
    if view is None:
        raise BetRefused(404, "unknown_table", f"unknown table {table_id!r}")
    shoe = find_shoe(view.shoes, wanted)
    if shoe is None and wanted is None:
        raise BetRefused(404, "unknown_shoe", f"no shoe started yet on table {table_id!r}")
    if shoe is None:
        kept = ", ".join(s.shoe_id for s in reversed(view.shoes)) or "none"
        raise BetRefused(404, "unknown_shoe", f"no shoe {wanted!r} on table {table_id!r}: the "
                         f"view keeps its last {len(view.shoes)} ({kept}), and 0, 1, ... "
                         "count shoes back from the current one")
    return shoe_roads(table_id, shoe).model_dump(mode="json")
