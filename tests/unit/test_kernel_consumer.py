"""The kernel's consumer group (`services.infra.consumer`): partition p of every
input topic goes to one worker (a service's inputs are co-partitioned with its own log),
the assignment depends on the workers' URLs alone, and every worker learns the whole map
(the views forward a request to the worker holding its key)."""

from __future__ import annotations

import json

from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata

from services.infra.consumer import Owners, OwnersAssignor, assign
from shared.topics import BETS_PLACED_TOPIC, TABLE_EVENTS_TOPIC


class Cluster:
    def __init__(self, partitions: dict[str, int]) -> None:
        self.partitions = partitions

    def partitions_for_topic(self, topic: str):
        return set(range(self.partitions[topic])) if topic in self.partitions else None


def member(url: str, topics=(BETS_PLACED_TOPIC, TABLE_EVENTS_TOPIC)) -> ConsumerProtocolMemberMetadata:
    return ConsumerProtocolMemberMetadata(0, list(topics), json.dumps({"url": url}).encode())


def test_partition_p_of_every_input_goes_to_one_worker_and_all_learn_the_map():
    cluster = Cluster({BETS_PLACED_TOPIC: 4, TABLE_EVENTS_TOPIC: 4})
    members = {"m-b": member("http://h:8203"), "m-a": member("http://h:8103")}
    out = assign(cluster, members)
    held = {m: {t: ps for t, ps in a.assignment} for m, a in out.items()}
    for m in members:
        assert held[m][BETS_PLACED_TOPIC] == held[m][TABLE_EVENTS_TOPIC]  # co-partitioned
    assert sorted(held["m-a"][BETS_PLACED_TOPIC] + held["m-b"][BETS_PLACED_TOPIC]) == [0, 1, 2, 3]
    maps = {a.user_data for a in out.values()}
    assert len(maps) == 1  # every member gets the same whole map
    table = json.loads(maps.pop())
    for m, url in (("m-a", "http://h:8103"), ("m-b", "http://h:8203")):
        assert [int(p) for p, u in table[TABLE_EVENTS_TOPIC].items() if u == url] == \
            held[m][TABLE_EVENTS_TOPIC]


def test_the_assignment_depends_on_the_urls_not_the_member_ids():
    cluster = Cluster({"t": 6})
    first = assign(cluster, {"x1": member("http://a:1", ["t"]), "y1": member("http://b:2", ["t"])})
    again = assign(cluster, {"y9": member("http://b:2", ["t"]), "a0": member("http://a:1", ["t"])})
    assert first["x1"].assignment == again["a0"].assignment  # a restarted worker: same ones
    assert first["y1"].assignment == again["y9"].assignment


def test_a_worker_reads_the_map_from_its_assignment():
    owners = Owners("http://h:8103", "g")
    assignor = OwnersAssignor(owners)
    meta = assignor.metadata(["t"])
    (only,) = assign(Cluster({"t": 2}), {"m": meta}).values()
    assignor.on_assignment(only)
    assert owners.owner("t", 0) == owners.owner("t", 1) == "http://h:8103"
    assert owners.owner("t", 7) is None and owners.owner("other", 0) is None
