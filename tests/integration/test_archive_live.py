"""The archiver against the real broker: every catalogue topic copied exactly once by
offset, through kill -9 at any moment, to a local directory and to a real S3-compatible
server."""

from __future__ import annotations

import json
import random
import threading
import uuid

import pytest

from services.archive.verify import verify
from services.infra.archive_store import open_store
from shared.topics import (
    BETS_DECISIONS_TOPIC,
    BETS_PLACED_TOPIC,
    DEALER_REJECTIONS_TOPIC,
    TABLE_EVENTS_TOPIC,
    TOPIC_NAMES,
    WALLET_TRANSACTIONS_TOPIC,
)
from tests.integration.archive_support import (
    archive_once,
    archived_records,
    archiver_process,
    kill9,
    log_records,
    producer,
)
from tests.integration.replay_support import apply_topics, croupier

pytestmark = pytest.mark.kafka

TOPICS = (BETS_PLACED_TOPIC, WALLET_TRANSACTIONS_TOPIC, TABLE_EVENTS_TOPIC)


def produce_steadily(bootstrap: str, stop: threading.Event, run: str,
                     flowing: threading.Event) -> int:
    """Records on three catalogue topics, many keys, until `stop`; returns how many. About
    2,000 a second (a few hundred a 0.3 s segment): as many segments as unthrottled, a
    fraction of the records to archive, read back and compare. `flowing` is set once the
    first 200 are acknowledged."""
    prod = producer(bootstrap)
    sent = 0
    while not stop.is_set():
        for _ in range(200):
            topic = TOPICS[sent % len(TOPICS)]
            prod.send(topic, key=f"{run}-k{sent % 37}".encode(),
                      value=json.dumps({"run": run, "n": sent}).encode())
            sent += 1
        prod.flush()
        flowing.set()
        stop.wait(0.1)
    prod.close()
    return sent


def archive_through_kills(bootstrap: str, url: str, tmp_path, kills: int = 4) -> None:
    """The archiver runs while records arrive and is killed -9 `kills` times at random
    moments (0.3 s segments: many kills land while a segment is being written); then one run
    with --once archives up to the log's end."""
    rng = random.Random(18)
    stop, flowing = threading.Event(), threading.Event()
    sent: list[int] = []
    feeder = threading.Thread(target=lambda: sent.append(
        produce_steadily(bootstrap, stop, uuid.uuid4().hex[:6], flowing)))
    feeder.start()
    log = tmp_path / "archiver.log"
    try:
        # the kills begin once records flow: a broker under load may answer "not leader"
        # for many seconds after the topics were created (a CI run: 200 records in the
        # kills' 16 s, the first flush retried throughout)
        assert flowing.wait(120), "the topics took no record for 120 s"
        for _ in range(kills):
            proc = archiver_process(bootstrap, url, log, "--flush-seconds", "0.3")
            stop.wait(rng.uniform(3.0, 5.0))
            kill9(proc)
    finally:
        stop.set()
        feeder.join(30)
    assert sent and sent[0] > 1000
    done = archiver_process(bootstrap, url, log, "--once", "--flush-seconds", "0.3")
    assert done.wait(120) == 0, log.read_text()[-3000:]


@pytest.fixture(scope="module")
def topics(platform_kafka):
    apply_topics(platform_kafka)
    return platform_kafka


def assert_archive_is_the_log(bootstrap: str, url: str) -> None:
    store = open_store(url)
    for topic in TOPIC_NAMES:
        assert archived_records(store, topic) == log_records(bootstrap, topic), topic
    report = verify(store, TOPIC_NAMES)
    assert report.ok, report.problems
    assert report.records == sum(len(log_records(bootstrap, t)) for t in TOPICS)


def test_kill_9_leaves_no_gap_and_no_duplicate(topics, archive_url, tmp_path):
    archive_through_kills(topics, archive_url, tmp_path)
    assert_archive_is_the_log(topics, archive_url)
    # a run with nothing new writes nothing and verify from the command line says OK
    again = croupier(topics, "archive", "run", "--url", archive_url, "--once")
    assert again.returncode == 0 and "archived 0 records" in again.stdout
    checked = croupier(topics, "archive", "verify", "--url", archive_url, "--against-log")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.splitlines()[-1].startswith("OK: ")


def test_a_tampered_archive_is_named_from_the_command_line(topics, archive_url):
    """A changed file, a missing file and two swapped segments, each named by verify."""
    topic = BETS_DECISIONS_TOPIC
    prod = producer(topics)
    for n in range(500):
        prod.send(topic, key=b"T1", value=json.dumps({"n": n}).encode(), partition=1)
        if n % 100 == 99:
            prod.flush()
            archive_once(topics, archive_url)
    prod.close()
    store = open_store(archive_url)
    folder = f"{topic}/p0001"
    files = [n for n in store.names(folder) if n.endswith(".parquet")]
    assert len(files) >= 5
    changed = bytearray(store.get(f"{folder}/{files[1]}"))
    changed[40] ^= 1
    store.put(f"{folder}/{files[1]}", bytes(changed))
    store.delete(f"{folder}/{files[2]}")
    a, b = (f.removesuffix(".parquet") for f in files[3:5])
    for suffix in (".parquet", ".manifest.json"):
        first, second = store.get(f"{folder}/{a}{suffix}"), store.get(f"{folder}/{b}{suffix}")
        store.put(f"{folder}/{a}{suffix}", second)
        store.put(f"{folder}/{b}{suffix}", first)
    checked = croupier(topics, "archive", "verify", "--url", archive_url, "--topic", topic)
    assert checked.returncode == 1
    out = checked.stdout
    assert f"PROBLEM: {folder}/{files[1]}: changed since it was archived" in out
    assert f"PROBLEM: {folder}/{files[2]}: missing" in out
    assert f"PROBLEM: {folder}/{a}.manifest.json: named for offset {int(a)} but covers " \
           f"offsets from {int(b)} (renamed or reordered)" in out


def test_offsets_that_aged_out_before_they_were_archived_stay_on_record(topics, archive_url):
    """Retention deleting records the archiver had not reached (it was down too long) is
    kept in the chain as an aged-out segment, and verify names those offsets for ever."""
    from kafka import TopicPartition

    from services.infra import topic_admin

    topic = DEALER_REJECTIONS_TOPIC
    prod = producer(topics)

    def send(count: int) -> None:
        for n in range(count):
            prod.send(topic, key=b"T9", value=json.dumps({"n": n}).encode(), partition=2)
        prod.flush()

    send(100)
    archive_once(topics, archive_url)
    store = open_store(archive_url)
    start = archived_records(store, topic)[-1][1] + 1 if archived_records(store, topic) else 0
    send(100)
    admin = topic_admin.admin_client(topics)
    admin.delete_records({TopicPartition(topic, 2): start + 50})  # 50 unarchived records gone
    admin.close()
    prod.close()
    again = croupier(topics, "archive", "run", "--url", archive_url, "--once")
    assert again.returncode == 0, again.stderr[-2000:]
    offsets = [o for p, o, _, _ in archived_records(store, topic) if p == 2]
    assert offsets[-50:] == list(range(start + 50, start + 100))
    assert start + 49 not in offsets
    checked = croupier(topics, "archive", "verify", "--url", archive_url, "--topic", topic)
    assert checked.returncode == 1
    assert (f"offsets {start}..{start + 49} aged out of the log before they were archived"
            in checked.stdout)
