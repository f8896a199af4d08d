"""Cluster tests' client side (tests/cluster_controller.rs): topic admin
with confluent-kafka's or kafka-python's AdminClient, and a confluent-kafka
producer that follows partition leaders. Prints one JSON object last.

  create <bootstrap> <client> <topic> <partitions> <rf> [key=value ...]
  validate <bootstrap> <topic> <partitions> <rf>     (validate_only)
  partitions <bootstrap> <topic> <new_total>
  delete <bootstrap> <topic>
  describe <bootstrap> <topic>
  produce <bootstrap> <topic> <count> <acks>
  produce_until <bootstrap> <topic> <acks> <stop_file>
  delete_records <bootstrap> <topic> <timeout_s> <partition>=<offset> ...
  earliest <bootstrap> <topic> <partitions>           (log start offsets)
  alter_config <bootstrap> <topic> key=value ...    (IncrementalAlterConfigs SET)
  describe_config <bootstrap> <topic> <key>          ({"value", "source"})
  fill <bootstrap> <topic> <partition> <megabytes>   (acks=1, 64 KiB values;
                                   {"delivered", "bytes", "errors"})
  elect <bootstrap> <preferred|unclean> <timeout_s> [<topic>:<partition> ...]
                                   (ElectLeaders; no partitions = all of them)
"""

import json
import os
import sys
import time


def confluent_admin(bootstrap):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap})


def create(bootstrap, client, topic, partitions, rf, configs):
    if client == "confluent":
        from confluent_kafka.admin import NewTopic

        admin = confluent_admin(bootstrap)
        futures = admin.create_topics(
            [NewTopic(topic, partitions, rf, config=configs)], request_timeout=30
        )
        futures[topic].result(timeout=60)
    else:
        from kafka.admin import KafkaAdminClient, NewTopic

        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
        admin.create_topics(
            [NewTopic(topic, partitions, rf, topic_configs=configs)], timeout_ms=30000
        )
        admin.close()
    return {"created": topic}


def validate(bootstrap, topic, partitions, rf):
    from confluent_kafka.admin import NewTopic

    admin = confluent_admin(bootstrap)
    futures = admin.create_topics(
        [NewTopic(topic, partitions, rf)], validate_only=True, request_timeout=30
    )
    futures[topic].result(timeout=60)
    return {"validated": topic}


def describe(bootstrap, topic):
    md = confluent_admin(bootstrap).list_topics(topic=topic, timeout=20)
    t = md.topics[topic]
    parts = {
        str(p.id): {"leader": p.leader, "replicas": p.replicas, "isr": p.isrs}
        for p in t.partitions.values()
    }
    return {
        "error": str(t.error) if t.error else None,
        "partitions": parts,
        "brokers": sorted(md.brokers.keys()),
        "controller": md.controller_id,
    }


def grow(bootstrap, topic, total):
    from confluent_kafka.admin import NewPartitions

    admin = confluent_admin(bootstrap)
    futures = admin.create_partitions([NewPartitions(topic, total)], request_timeout=30)
    futures[topic].result(timeout=60)
    return {"partitions": total}


def delete(bootstrap, topic):
    admin = confluent_admin(bootstrap)
    futures = admin.delete_topics([topic], request_timeout=30)
    futures[topic].result(timeout=60)
    return {"deleted": topic}


def producer(bootstrap, acks):
    from confluent_kafka import Producer

    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": acks,
            "linger.ms": 5,
            "enable.idempotence": acks == "all",
            "message.timeout.ms": 60000,
            "topic.metadata.refresh.interval.ms": 1000,
        }
    )


def fill(bootstrap, topic, partition, megabytes):
    """`megabytes` MB of incompressible 64 KiB values into one partition,
    flat out: the data a throttled reassignment then moves."""
    from confluent_kafka import Producer

    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "1",
            "linger.ms": 10,
            "batch.size": 1000000,
            "message.timeout.ms": 120000,
        }
    )
    value = os.urandom(64 * 1024)
    n = megabytes * 1000 * 1000 // len(value) + 1
    delivered = [0]
    errors = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err.name())
        else:
            delivered[0] += 1

    for i in range(n):
        while True:
            try:
                p.produce(topic, value=value, partition=partition, on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    p.flush(120)
    return {"delivered": delivered[0], "bytes": delivered[0] * len(value), "errors": errors}


def produce(bootstrap, topic, count, acks, stop_file=None):
    p = producer(bootstrap, acks)
    delivered = []
    errors = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err.name())
        else:
            delivered.append([msg.partition(), msg.offset()])

    i = 0
    while (stop_file is None and i < count) or (
        stop_file is not None and not os.path.exists(stop_file)
    ):
        while True:
            try:
                # Keyed, so records spread over every partition.
                p.produce(topic, key=("k%d" % i).encode(), value=("v%d" % i).encode(),
                          on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.05)
        i += 1
        p.poll(0)
        if stop_file is not None:
            time.sleep(0.002)
    left = p.flush(60)
    return {"sent": i, "delivered": len(delivered), "errors": errors, "unflushed": left,
            "partitions": sorted({d[0] for d in delivered}),
            "per_partition": {str(q): sum(1 for d in delivered if d[0] == q)
                              for q in sorted({d[0] for d in delivered})}}


def delete_records(bootstrap, topic, timeout_s, asks):
    """AdminClient.delete_records: per partition its low watermark, or the
    broker's error name."""
    from confluent_kafka import KafkaException, TopicPartition

    admin = confluent_admin(bootstrap)
    wanted = [TopicPartition(topic, int(p), int(o))
              for p, o in (a.split("=", 1) for a in asks)]
    futures = admin.delete_records(wanted, operation_timeout=timeout_s,
                                   request_timeout=timeout_s + 30)
    out = {}
    for tp, f in futures.items():
        try:
            out[str(tp.partition)] = {"low_watermark": f.result().low_watermark}
        except KafkaException as e:
            out[str(tp.partition)] = {"error": e.args[0].name()}
    return out


def earliest(bootstrap, topic, partitions):
    """Each partition's log start offset from its leader (ListOffsets -2)."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "earliest-probe"})
    out = {}
    for p in range(partitions):
        low, _ = c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
        out[str(p)] = low
    c.close()
    return out


def alter_config(bootstrap, topic, pairs):
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
               for k, v in (p.split("=", 1) for p in pairs)]
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=entries)
    admin = confluent_admin(bootstrap)  # kept alive until the answers are in
    futures = admin.incremental_alter_configs([resource], request_timeout=30)
    for f in futures.values():
        f.result(timeout=60)
    return {"altered": topic}


def describe_config(bootstrap, topic, key):
    from confluent_kafka.admin import ConfigResource

    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    admin = confluent_admin(bootstrap)  # kept alive until the answers are in
    futures = admin.describe_configs([resource], request_timeout=30)
    configs = list(futures.values())[0].result(timeout=60)
    from confluent_kafka.admin import ConfigSource

    entry = configs[key]
    src = entry.source
    return {"value": entry.value,
            "source": src.name if hasattr(src, "name") else ConfigSource(src).name}


def elect(bootstrap, kind, timeout_s, names):
    """AdminClient.elect_leaders: per "topic:partition" NONE or the
    broker's error name; {"error": name} when the whole request failed."""
    from confluent_kafka import ElectionType, KafkaException, TopicPartition

    admin = confluent_admin(bootstrap)
    parts = None
    if names:
        parts = [TopicPartition(n.rsplit(":", 1)[0], int(n.rsplit(":", 1)[1])) for n in names]
    election = ElectionType.PREFERRED if kind == "preferred" else ElectionType.UNCLEAN
    # confluent-kafka 2.16's C binding fails on any timeout keyword here
    # ("more argument specifiers than keyword list entries"): the defaults
    # (socket.timeout.ms, 60 s) bound the wait.
    future = admin.elect_leaders(election, parts)
    try:
        results = future.result(timeout=timeout_s + 60)
    except KafkaException as e:
        return {"error": e.args[0].name()}
    out = {}
    for tp, err in results.items():
        key = "%s:%d" % (tp.topic, tp.partition)
        if err is None:
            out[key] = "NONE"
        else:
            # A KafkaError, or a KafkaException wrapping one.
            err = err.args[0] if isinstance(err, KafkaException) else err
            out[key] = err.name()
    return out


def main():
    cmd, bootstrap = sys.argv[1], sys.argv[2]
    args = sys.argv[3:]
    if cmd == "create":
        configs = dict(a.split("=", 1) for a in args[4:])
        out = create(bootstrap, args[0], args[1], int(args[2]), int(args[3]), configs)
    elif cmd == "validate":
        out = validate(bootstrap, args[0], int(args[1]), int(args[2]))
    elif cmd == "describe":
        out = describe(bootstrap, args[0])
    elif cmd == "partitions":
        out = grow(bootstrap, args[0], int(args[1]))
    elif cmd == "delete":
        out = delete(bootstrap, args[0])
    elif cmd == "produce":
        out = produce(bootstrap, args[0], int(args[1]), args[2])
    elif cmd == "produce_until":
        out = produce(bootstrap, args[0], 0, args[1], stop_file=args[2])
    elif cmd == "fill":
        out = fill(bootstrap, args[0], int(args[1]), int(args[2]))
    elif cmd == "delete_records":
        out = delete_records(bootstrap, args[0], float(args[1]), args[2:])
    elif cmd == "earliest":
        out = earliest(bootstrap, args[0], int(args[1]))
    elif cmd == "alter_config":
        out = alter_config(bootstrap, args[0], args[1:])
    elif cmd == "describe_config":
        out = describe_config(bootstrap, args[0], args[1])
    elif cmd == "elect":
        out = elect(bootstrap, args[0], float(args[1]), args[2:])
    else:
        raise SystemExit("unknown command " + cmd)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
