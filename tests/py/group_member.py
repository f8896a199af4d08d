"""One member of a consumer group, with a real client library.

Usage: group_member.py --client confluent|kafka-python|aiokafka
         --bootstrap HOST:PORT --group G --topic T [--strategy S]
         [--instance-id ID] [--session-ms N]

Prints one JSON line per event on stdout, flushed at once:
  {"assigned": [partitions]}          after each rebalance
  {"p": partition, "o": offset, "v": value}   per record, once processed
                                      (before its commit: at-least-once)
  {"committed": [[partition, next offset], ...]}  after each sync commit
                                      returned
  {"commit_failed": error}            a commit that raced a rebalance
Runs until SIGTERM (then closes cleanly: final commit, LeaveGroup) or
SIGKILL. The tests decide when everything was consumed.
"""

import argparse
import asyncio
import json
import signal
import sys
import time

stop = False


def on_term(*_):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def run_confluent(a):
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    conf = {
        "bootstrap.servers": a.bootstrap,
        "group.id": a.group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": a.session_ms,
        "heartbeat.interval.ms": max(100, a.session_ms // 5),
        "partition.assignment.strategy": a.strategy or "range",
    }
    if a.instance_id:
        conf["group.instance.id"] = a.instance_id
    c = Consumer(conf)

    cooperative = (a.strategy or "") == "cooperative-sticky"
    owned = set()

    # Eager protocols hand over the whole new assignment; cooperative ones
    # the partitions added or removed.
    def on_assign(consumer, parts):
        if cooperative:
            consumer.incremental_assign(parts)
            owned.update(p.partition for p in parts)
        else:
            owned.clear()
            owned.update(p.partition for p in parts)
        emit({"assigned": sorted(owned)})

    def on_revoke(consumer, parts):
        if cooperative:
            consumer.incremental_unassign(parts)
            owned.difference_update(p.partition for p in parts)

    c.subscribe([a.topic], on_assign=on_assign, on_revoke=on_revoke)
    while not stop:
        msgs = c.consume(num_messages=100, timeout=0.2)
        good = [m for m in msgs if m.error() is None]
        if not good:
            continue
        offsets = {}
        for m in good:
            emit({"p": m.partition(), "o": m.offset(), "v": m.value().decode()})
            offsets[m.partition()] = m.offset() + 1
        try:
            c.commit(
                offsets=[TopicPartition(a.topic, p, o) for p, o in offsets.items()],
                asynchronous=False,
            )
        except KafkaException as e:
            # A commit racing a rebalance fails (ILLEGAL_GENERATION,
            # REBALANCE_IN_PROGRESS), as against Kafka; an application
            # goes on and the next owner re-reads (at-least-once).
            emit({"commit_failed": str(e)})
            continue
        emit({"committed": sorted(offsets.items())})
    c.close()


def run_kafka_python(a):
    import logging
    import os

    from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition
    from kafka.errors import KafkaError

    # The group protocol steps on stderr (join, sync, heartbeat errors), so
    # a stalled rebalance in a test run shows where it stalled.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(
        "[kafka-python %d] %%(asctime)s %%(levelname)s %%(name)s: %%(message)s" % os.getpid()))
    # SHARDLOG_KAFKA_PYTHON_DEBUG=1: every request and response too.
    debug = os.environ.get("SHARDLOG_KAFKA_PYTHON_DEBUG") == "1"
    names = ("kafka",) if debug else ("kafka.coordinator", "kafka.consumer.subscription_state")
    for name in names:
        logging.getLogger(name).setLevel(logging.DEBUG if debug else logging.INFO)
        logging.getLogger(name).addHandler(handler)
    from kafka.consumer.subscription_state import ConsumerRebalanceListener

    kw = dict(
        bootstrap_servers=a.bootstrap,
        group_id=a.group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=a.session_ms,
        heartbeat_interval_ms=max(100, a.session_ms // 5),
    )
    if a.instance_id:
        kw["group_instance_id"] = a.instance_id
    c = KafkaConsumer(**kw)

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            pass

        def on_partitions_assigned(self, assigned):
            emit({"assigned": sorted(p.partition for p in c.assignment())})

    # kafka-python 3.0.12 sometimes hangs for good when, as group leader,
    # it first assigns without the topic's metadata ("No partition metadata
    # for topic"), rejoins at once and gets its second SyncGroup answer: the
    # broker's log shows the answer sent within a millisecond, the client
    # logs nothing more and never heartbeats again (seen in 1 of ~10 runs,
    # also with request_timeout_ms=10000). Fetching the topic's metadata
    # before subscribing avoids that first empty assignment.
    for _ in range(100):
        if c.partitions_for_topic(a.topic):
            break
        time.sleep(0.1)
    c.subscribe([a.topic], listener=Listener())
    while not stop:
        batch = c.poll(timeout_ms=200, max_records=100)
        recs = [r for rs in batch.values() for r in rs]
        if not recs:
            continue
        offsets = {}
        for r in recs:
            emit({"p": r.partition, "o": r.offset, "v": r.value.decode()})
            offsets[TopicPartition(a.topic, r.partition)] = OffsetAndMetadata(r.offset + 1, "", -1)
        try:
            c.commit(offsets)
        except KafkaError as e:
            emit({"commit_failed": repr(e)})  # see run_confluent
            continue
        emit({"committed": sorted((tp.partition, o.offset) for tp, o in offsets.items())})
    c.close()


async def run_aiokafka(a):
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.abc import ConsumerRebalanceListener
    from aiokafka.errors import KafkaError

    kw = dict(
        bootstrap_servers=a.bootstrap,
        group_id=a.group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=a.session_ms,
        heartbeat_interval_ms=max(100, a.session_ms // 5),
    )
    if a.instance_id:
        kw["group_instance_id"] = a.instance_id
    c = AIOKafkaConsumer(**kw)

    class Listener(ConsumerRebalanceListener):
        async def on_partitions_revoked(self, revoked):
            pass

        async def on_partitions_assigned(self, assigned):
            emit({"assigned": sorted(p.partition for p in c.assignment())})

    await c.start()
    c.subscribe([a.topic], listener=Listener())
    try:
        while not stop:
            batch = await c.getmany(timeout_ms=200, max_records=100)
            recs = [r for rs in batch.values() for r in rs]
            if not recs:
                continue
            offsets = {}
            for r in recs:
                emit({"p": r.partition, "o": r.offset, "v": r.value.decode()})
                offsets[TopicPartition(a.topic, r.partition)] = r.offset + 1
            try:
                await c.commit(offsets)
            except KafkaError as e:
                emit({"commit_failed": repr(e)})  # see run_confluent
                continue
            emit({"committed": sorted((tp.partition, o) for tp, o in offsets.items())})
    finally:
        await c.stop()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--client", required=True)
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--strategy", default=None)
    p.add_argument("--instance-id", default=None)
    p.add_argument("--session-ms", type=int, default=6000)
    a = p.parse_args()
    if a.client == "confluent":
        run_confluent(a)
    elif a.client == "kafka-python":
        run_kafka_python(a)
    elif a.client == "aiokafka":
        asyncio.run(run_aiokafka(a))
    else:
        sys.exit(f"unknown client {a.client}")


if __name__ == "__main__":
    main()
