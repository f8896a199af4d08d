"""A log dir holding magic-1 messages, written by Kafka 3.9 with
inter.broker.protocol.version=2.8 and log.message.format.version=0.10.2,
then read back from whatever broker serves it (tests/cluster_mixed.rs).

  legacy_log.py BOOTSTRAP produce   topics created, records written
  legacy_log.py BOOTSTRAP check     every record once: confluent-kafka
                                    (Fetch v4+), kafka-python (0, 9)
                                    (Fetch v1: magic 0) and (0, 10, 0)
                                    (Fetch v2: magic 1); ListOffsets by time
  legacy_log.py BOOTSTRAP compacted the compacted topic as it reads now

The last stdout line is a JSON object.
"""

import json
import sys

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KTopicPartition

BOOTSTRAP, MODE = sys.argv[1], sys.argv[2]
TOPIC, COMPACT = "legacy", "legacy-compact"
# (codec, records): plain messages and compressed wrappers in one log
PARTS = [("none", 60), ("gzip", 60), ("lz4", 60), ("snappy", 60), ("none", 20)]
COUNT = sum(n for _, n in PARTS)
COMPACT_COUNT, KEYS = 400, 10
T0 = 1_700_000_000_000


def record(i):
    key = None if i % 7 == 0 else f"k{i}".encode()
    return key, f"value-{i}-".encode() + b"x" * 40, T0 + i * 1000


def produce():
    admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
    compact = {
        "cleanup.policy": "compact",
        "segment.bytes": "4096",
        "min.cleanable.dirty.ratio": "0.01",
        "min.compaction.lag.ms": "0",
    }
    futures = admin.create_topics([
        NewTopic(TOPIC, 1, 1, config={"segment.bytes": "8192", "retention.ms": "-1"}),
        NewTopic(COMPACT, 1, 1, config=compact),
    ])
    for f in futures.values():
        f.result(60)
    i = 0
    for codec, n in PARTS:
        # api_version (0, 10, 0): Produce v2 with magic-1 message sets
        p = KafkaProducer(bootstrap_servers=BOOTSTRAP, api_version=(0, 10, 0),
                          compression_type=None if codec == "none" else codec,
                          linger_ms=50, batch_size=4096, retries=0)
        fs = []
        for _ in range(n):
            key, value, ts = record(i)
            fs.append(p.send(TOPIC, partition=0, key=key, value=value, timestamp_ms=ts))
            i += 1
        p.flush()
        [f.get(timeout=30) for f in fs]
        p.close()
    for half, codec in enumerate(["gzip", None]):  # gzip wrappers in a closed segment
        p = KafkaProducer(bootstrap_servers=BOOTSTRAP, api_version=(0, 10, 0),
                          compression_type=codec, linger_ms=20, batch_size=2048, retries=0)
        fs = [p.send(COMPACT, partition=0, key=f"k{j % KEYS}".encode(), value=f"v{j}".encode())
              for j in range(half * COMPACT_COUNT // 2, (half + 1) * COMPACT_COUNT // 2)]
        p.flush()
        [f.get(timeout=30) for f in fs]
        p.close()
    print(json.dumps({"produced": COUNT, "compact": COMPACT_COUNT}))


def read_confluent(topic):
    c = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": "legacy-log",
                  "enable.auto.commit": False, "enable.partition.eof": True})
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    while True:
        m = c.poll(30)
        assert m is not None, f"{topic}: timed out after {len(got)} records"
        if m.error() is not None:
            assert m.error().code() == -191, m.error()  # _PARTITION_EOF
            break
        got.append((m.offset(), m.key(), m.value(), m.timestamp()[1]))
    c.close()
    return got


def offsets_for_times(topic, picks):
    c = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": "legacy-log"})
    for i in picks:
        # one partition per request (a request names a partition once)
        for t, want in [(record(i)[2], i), (record(i)[2] - 1, i), (record(i)[2] + 1, i + 1)]:
            [tp] = c.offsets_for_times([TopicPartition(topic, 0, t)], 30)
            want = -1 if want >= COUNT else want
            assert tp.offset == want, ("ListOffsets by time", t, want, tp)
    c.close()


def read_kafka_python(api):
    c = KafkaConsumer(bootstrap_servers=BOOTSTRAP, api_version=api, group_id=None,
                      enable_auto_commit=False, fetch_max_wait_ms=100)
    tp = KTopicPartition(TOPIC, 0)
    c.assign([tp])
    c.seek(tp, 0)
    got = []
    while len(got) < COUNT:
        batch = c.poll(timeout_ms=10_000)
        assert batch, f"{api}: timed out after {len(got)} records"
        for m in batch.get(tp, []):
            got.append((m.offset, m.key, m.value, m.timestamp))
    c.close()
    return got


def check():
    want = [(i,) + record(i) for i in range(COUNT)]
    got = read_confluent(TOPIC)
    assert got == want, ("Fetch v4+", len(got), [g for g in got if g not in want][:3])
    offsets_for_times(TOPIC, [0, 61, 150, 200, 259])
    # Fetch v1 (magic 0: no timestamps) and Fetch v2 (magic 1 as stored)
    old = read_kafka_python((0, 9))
    assert [g[:3] for g in old] == [w[:3] for w in want], ("Fetch v1", len(old))
    v1 = read_kafka_python((0, 10, 0))
    assert v1 == want, ("Fetch v2", len(v1))
    print(json.dumps({"checked": len(got)}))


def compacted():
    got = read_confluent(COMPACT)
    print(json.dumps({"records": [[o, k.decode(), v.decode()] for o, k, v, _ in got]}))


{"produce": produce, "check": check, "compacted": compacted}[MODE]()
