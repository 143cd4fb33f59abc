"""Read a topic from its beginning to the end offsets it had when the read started.

dealer-event rebuilds its table states this way before it takes any input, and
tests read back what the services wrote. kafka-python, blocking: callers on an
event loop run it in a thread.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from kafka import KafkaConsumer, TopicPartition
from kafka.consumer.fetcher import ConsumerRecord


class LogReadError(RuntimeError):
    pass


def read_to_end(bootstrap: str, topic: str, timeout_s: float = 60.0) -> Iterator[ConsumerRecord]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             group_id=None, client_id="croupier-log-reader")
    try:
        partitions = consumer.partitions_for_topic(topic)
        if not partitions:
            raise LogReadError(f"topic {topic} does not exist; run `croupier topics apply`")
        tps = [TopicPartition(topic, p) for p in sorted(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        pending = {tp for tp in tps if ends[tp] > 0}
        deadline = time.monotonic() + timeout_s
        while pending:
            if time.monotonic() > deadline:
                raise LogReadError(f"reading {topic} to its end took over {timeout_s:.0f} s")
            for tp, records in consumer.poll(timeout_ms=500).items():
                for record in records:
                    if record.offset < ends[tp]:
                        yield record
            for tp in list(pending):
                if consumer.position(tp) >= ends[tp]:
                    pending.discard(tp)
    finally:
        consumer.close()
