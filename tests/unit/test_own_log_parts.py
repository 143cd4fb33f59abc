"""An input record that writes several entries of its own log takes effect when its last
entry is folded, all of it at once, or not at all (`own_log.fold_entry`): a record a crash
cut short leaves nothing in the state, its input is not marked applied, and its entries'
outputs are not in the outbox; the next writer decides it again from its first part."""

from __future__ import annotations

from dataclasses import dataclass

from services.infra.own_log import PartitionState, fold_entry
from shared.events.sources import InputRef


@dataclass(frozen=True)
class Entry:
    entry_id: str
    prev: str
    source: InputRef
    writes: dict
    published_through: int = -1
    also_decided: tuple[InputRef, ...] = ()


class Fold:
    def apply(self, kv, entry: Entry) -> None:
        kv.update(entry.writes)

    def outputs(self, entry: Entry) -> list:
        return []


def part(offset: int, part: int, last: bool, writes: dict, at: int = 7) -> Entry:
    return Entry(entry_id=f"e{offset}", prev=f"e{offset - 1}" if offset else "",
                 source=InputRef(topic="in", partition=0, offset=at,
                                                  part=part, last=last), writes=writes)


def fold(entries: list[Entry]) -> PartitionState:
    state: PartitionState = PartitionState(0)
    for offset, entry in enumerate(entries):
        assert fold_entry(state, offset, entry, Fold())
    return state


def test_a_record_takes_effect_with_its_last_entry_all_at_once():
    first, second = part(0, 0, False, {"a": 1}), part(1, 1, True, {"b": 2})
    held = fold([first])
    assert held.kv == {} and held.resume_at("in", 0) == 0 and held.unpublished == []
    done = fold([first, second])
    assert done.kv == {"a": 1, "b": 2} and done.resume_at("in", 0) == 8
    assert [o for o, _ in done.unpublished] == [0, 1]


def test_a_record_cut_short_is_dropped_when_it_is_decided_again():
    cut = [part(0, 0, False, {"a": 1, "stale": True}), part(1, 1, False, {"b": 1})]
    again = [part(2, 0, False, {"a": 2}), part(3, 1, False, {"b": 2}), part(4, 2, True, {})]
    state = fold(cut + again)
    assert state.kv == {"a": 2, "b": 2} and state.resume_at("in", 0) == 8
    assert [o for o, _ in state.unpublished] == [2, 3, 4]
    # an entry that continues no record it follows changes nothing
    orphan = fold([part(0, 0, True, {"x": 1}), part(1, 1, True, {"y": 1}, at=8)])
    assert orphan.kv == {"x": 1} and orphan.resume_at("in", 0) == 8
