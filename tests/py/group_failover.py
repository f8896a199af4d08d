"""A consumer group across a coordinator failover, with confluent-kafka, for
tests/cluster_groups.rs. Each command prints one JSON object.

  group_failover.py produce BOOTSTRAP TOPIC N
      N keyed records, idempotent at acks=all: {"acked": n, "errors": [...]}
  group_failover.py consume BOOTSTRAP GROUP TOPIC N
      one member reads at least N records, commits what it read
      synchronously, leaves: {"read": n, "committed": {partition: next}}
  group_failover.py resume BOOTSTRAP GROUP TOPIC TOTAL
      a new member of the group: the committed offsets it is given, the
      first offset it reads in each partition, and how many it reads until
      the group has read TOTAL: {"committed": {...}, "first": {...}, "read": n}
"""

import json
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer

DEADLINE_S = 120


def consumer(bootstrap, group):
    return Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 10000,
        "topic.metadata.refresh.interval.ms": 1000,
    })


def produce(bootstrap, topic, n):
    p = Producer({
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "enable.idempotence": True,
        "linger.ms": 5,
    })
    acked, errors = [0], []

    def on_delivery(err, _msg):
        if err is not None:
            errors.append(err.name())
        else:
            acked[0] += 1

    for i in range(n):
        p.produce(topic, key=b"k%d" % i, value=b"v%d" % i, on_delivery=on_delivery)
        p.poll(0)
    p.flush(60)
    return {"acked": acked[0], "errors": errors}


def consume(bootstrap, group, topic, n):
    c = consumer(bootstrap, group)
    c.subscribe([topic])
    read = 0
    deadline = time.time() + DEADLINE_S
    while read < n and time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            raise KafkaException(m.error())
        read += 1
    committed = c.commit(asynchronous=False)
    c.close()
    return {"read": read,
            "committed": {str(tp.partition): tp.offset for tp in committed if tp.offset >= 0}}


def resume(bootstrap, group, topic, total):
    c = consumer(bootstrap, group)
    assigned = []
    c.subscribe([topic], on_assign=lambda _c, parts: assigned.extend(parts))
    deadline = time.time() + DEADLINE_S
    first, read, committed = {}, 0, None
    while time.time() < deadline:
        m = c.poll(0.5)
        if committed is None and assigned:
            got = c.committed(assigned, timeout=30)
            committed = {str(tp.partition): tp.offset for tp in got if tp.offset >= 0}
        if m is None:
            if committed is not None and read + sum(committed.values()) >= total:
                break
            continue
        if m.error():
            raise KafkaException(m.error())
        first.setdefault(str(m.partition()), m.offset())
        read += 1
    c.close()
    return {"committed": committed, "first": first, "read": read}


def main():
    cmd, bootstrap, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    if cmd == "produce":
        out = produce(bootstrap, args[0], int(args[1]))
    elif cmd == "consume":
        out = consume(bootstrap, args[0], args[1], int(args[2]))
    elif cmd == "resume":
        out = resume(bootstrap, args[0], args[1], int(args[2]))
    else:
        raise SystemExit("unknown command " + cmd)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
