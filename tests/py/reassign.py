"""Partition reassignment with kafka-python's KafkaAdminClient (KIP-455
AlterPartitionReassignments / ListPartitionReassignments, sent to the
controller), for tests/cluster_reassignment.rs. Prints one JSON object last.

  alter <bootstrap> <topic> <partition>=<b1,b2,...>|<partition>=cancel ...
        -> {"<partition>": null | "<error class name>", ...}
  list <bootstrap> [<topic>]
        -> {"<topic>:<partition>": {"replicas": [...], "adding_replicas": [...],
                                    "removing_replicas": [...]}, ...}
"""

import json
import sys
import time

from kafka import TopicPartition
from kafka.admin import KafkaAdminClient


def admin(bootstrap):
    return KafkaAdminClient(
        bootstrap_servers=bootstrap.split(","),
        request_timeout_ms=30000,
        client_id="reassign-test",
    )


def with_retries(call):
    """kafka-python 3.0 gives up on the first broker that refuses a
    connection (the tests cut one off) instead of trying another, as the
    Java client does: a new client, a few times. Failures before the
    request is answered change nothing on the broker."""
    from kafka.errors import KafkaConnectionError, NodeNotReadyError

    for attempt in range(6):
        try:
            return call()
        except (KafkaConnectionError, NodeNotReadyError) as e:
            if attempt == 5:
                raise
            print("retrying after %r" % (e,), file=sys.stderr)
            time.sleep(0.5)


def alter(bootstrap, topic, specs):
    asked = {}
    for spec in specs:
        p, target = spec.split("=", 1)
        asked[TopicPartition(topic, int(p))] = (
            None if target == "cancel" else [int(b) for b in target.split(",")]
        )
    def call():
        a = admin(bootstrap)
        try:
            return a.alter_partition_reassignments(asked, timeout_ms=30000)
        finally:
            a.close()

    results = with_retries(call)
    return {
        str(tp.partition): (None if err is None else err.__name__)
        for tp, err in results.items()
    }


def list_(bootstrap, topic):
    asked = None
    if topic is not None:
        asked = {topic: list(range(64))}

    def call():
        a = admin(bootstrap)
        try:
            return a.list_partition_reassignments(asked, timeout_ms=30000)
        finally:
            a.close()

    found = with_retries(call)
    return {
        "%s:%d" % (tp.topic, tp.partition): {
            k: list(v[k]) for k in ("replicas", "adding_replicas", "removing_replicas")
        }
        for tp, v in found.items()
    }


def main():
    cmd, bootstrap = sys.argv[1], sys.argv[2]
    if cmd == "alter":
        out = alter(bootstrap, sys.argv[3], sys.argv[4:])
    elif cmd == "list":
        out = list_(bootstrap, sys.argv[3] if len(sys.argv) > 3 else None)
    else:
        raise SystemExit("unknown command " + cmd)
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
