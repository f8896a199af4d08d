"""confluent-kafka (librdkafka) transactional producer against a broker.

usage:
  txn_confluent.py loops BOOTSTRAP TOPIC_A TOPIC_B TXNS PER_PARTITION
      TOPIC_A and TOPIC_B have 3 partitions each. TXNS transactions, each
      writing PER_PARTITION records to every one of the 6 partitions and
      committing the offsets of group "<TOPIC_A>-g" inside the transaction
      (send_offsets_to_transaction, offset = 1000 + txn number); even
      transactions commit, odd ones abort (after a flush, so their records
      are in the log). While the first transaction is open (flushed, not
      ended) the script asks ListOffsets latest at read_committed and at
      read_uncommitted. Then a read_committed and a read_uncommitted consumer
      read every partition to its end. Prints one JSON line:
        open_lso / open_hw: {partition: offset} of TOPIC_A while open,
        committed / uncommitted: {topic-partition: [values in order]},
        group_offsets: {topic-partition: committed offset of the group}.
  txn_confluent.py abandon BOOTSTRAP TOPIC TIMEOUT_MS
      Begins a transaction with transaction.timeout.ms=TIMEOUT_MS, writes
      5 records to partition 0, flushes, and exits without ending it (the
      coordinator must abort it after the timeout). Prints JSON.
  txn_confluent.py bad_timeout BOOTSTRAP TXN_ID TIMEOUT_MS
      init_transactions with transaction.timeout.ms=TIMEOUT_MS (above the
      broker's transaction.max.timeout.ms), waiting up to 30 s. Prints JSON:
        error: the error's name ("ok" when it succeeded), fatal, seconds.
  txn_confluent.py fence BOOTSTRAP TOPIC
      Producer 1 writes in a transaction; producer 2 with the same
      transactional.id calls init_transactions (fencing 1 and aborting its
      transaction); producer 1's commit must fail as fenced. Prints JSON.
"""
import json
import os
import sys
import time

from confluent_kafka import (
    Consumer,
    KafkaException,
    Producer,
    TopicPartition,
)


def producer(bootstrap, txn_id):
    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": txn_id,
            "transaction.timeout.ms": 60000,
            "linger.ms": 5,
        }
    )


def consumer(bootstrap, level, group=None):
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group or f"reader-{level}-{time.time()}",
            "isolation.level": level,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )


def read_all(bootstrap, level, topics):
    """Every record of every partition up to its end at `level`."""
    c = consumer(bootstrap, level)
    tps = [TopicPartition(t, p, 0) for t in topics for p in range(3)]
    ends = {}
    for tp in tps:
        _, high = c.get_watermark_offsets(TopicPartition(tp.topic, tp.partition), timeout=10, cached=False)
        ends[(tp.topic, tp.partition)] = high
    c.assign(tps)
    got = {f"{t}-{p}": [] for t in topics for p in range(3)}
    done = set()
    deadline = time.time() + 60
    while len(done) < len(tps) and time.time() < deadline:
        m = c.poll(0.2)
        for key, end in ends.items():
            pos = c.position([TopicPartition(key[0], key[1])])[0].offset
            if pos >= end or end == 0:
                done.add(key)
        if m is None:
            continue
        if m.error():
            raise KafkaException(m.error())
        got[f"{m.topic()}-{m.partition()}"].append(m.value().decode())
    c.close()
    return got


def loops(bootstrap, topic_a, topic_b, txns, per_partition):
    group = f"{topic_a}-g"
    p = producer(bootstrap, f"{topic_a}-txn")
    p.init_transactions(30)
    meta_consumer = consumer(bootstrap, "read_committed", group)
    open_lso, open_hw = {}, {}
    for n in range(txns):
        p.begin_transaction()
        for topic in (topic_a, topic_b):
            for part in range(3):
                for i in range(per_partition):
                    p.produce(topic, value=f"{n}:{part}:{i}".encode(), partition=part)
        offsets = [TopicPartition(topic_a, part, 1000 + n) for part in range(3)]
        p.send_offsets_to_transaction(offsets, meta_consumer.consumer_group_metadata(), 30)
        p.flush(30)
        if n == 0:
            rc = consumer(bootstrap, "read_committed")
            ru = consumer(bootstrap, "read_uncommitted")
            for part in range(3):
                tp = TopicPartition(topic_a, part)
                open_lso[part] = rc.get_watermark_offsets(tp, timeout=10, cached=False)[1]
                open_hw[part] = ru.get_watermark_offsets(tp, timeout=10, cached=False)[1]
            rc.close()
            ru.close()
        if n % 2 == 0:
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)
    committed_offsets = meta_consumer.committed(
        [TopicPartition(topic_a, part) for part in range(3)], timeout=10
    )
    meta_consumer.close()
    return {
        "open_lso": open_lso,
        "open_hw": open_hw,
        "committed": read_all(bootstrap, "read_committed", [topic_a, topic_b]),
        "uncommitted": read_all(bootstrap, "read_uncommitted", [topic_a, topic_b]),
        "group_offsets": {f"{tp.topic}-{tp.partition}": tp.offset for tp in committed_offsets},
    }


def fence(bootstrap, topic):
    out = {}
    p1 = producer(bootstrap, f"{topic}-fence")
    p1.init_transactions(30)
    p1.begin_transaction()
    p1.produce(topic, value=b"from-1", partition=0)
    p1.flush(30)
    p2 = producer(bootstrap, f"{topic}-fence")
    p2.init_transactions(30)
    out["second_init"] = "ok"
    try:
        p1.commit_transaction(30)
        out["first_commit"] = "ok"
    except KafkaException as e:
        err = e.args[0]
        out["first_commit"] = err.name()
        out["first_fatal"] = err.fatal()
    p2.begin_transaction()
    p2.produce(topic, value=b"from-2", partition=0)
    p2.commit_transaction(30)
    out["read_committed"] = read_all(bootstrap, "read_committed", [topic])[f"{topic}-0"]
    return out


def abandon(bootstrap, topic, timeout_ms):
    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": f"{topic}-abandoned",
            "transaction.timeout.ms": timeout_ms,
        }
    )
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(5):
        p.produce(topic, value=f"abandoned-{i}".encode(), partition=0)
    p.flush(30)
    print(json.dumps({"written": 5}), flush=True)
    os._exit(0)


def bad_timeout(bootstrap, txn_id, timeout_ms):
    """librdkafka's 0103_transactions do_test_misuse_txn: a timeout the
    broker refuses fails init_transactions at once, fatally."""
    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": txn_id,
            "transaction.timeout.ms": timeout_ms,
        }
    )
    started = time.monotonic()
    out = {}
    try:
        p.init_transactions(30)
        out["error"] = "ok"
    except KafkaException as e:
        err = e.args[0]
        out["error"] = err.name()
        out["fatal"] = err.fatal()
    out["seconds"] = time.monotonic() - started
    return out


def main():
    mode, bootstrap = sys.argv[1], sys.argv[2]
    if mode == "loops":
        result = loops(bootstrap, sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]))
    elif mode == "abandon":
        abandon(bootstrap, sys.argv[3], int(sys.argv[4]))
        return
    elif mode == "bad_timeout":
        result = bad_timeout(bootstrap, sys.argv[3], int(sys.argv[4]))
    else:
        result = fence(bootstrap, sys.argv[3])
    print(json.dumps(result))


main()
