"""A confluent-kafka consumer reading a topic from the start as fast as it
can, for the client-quota tests (tests/quotas_clients.rs). Prints one JSON
object last: {"bytes", "records", "elapsed_s", "throttle_events",
"max_throttle_ms", "errors"}.

  quota_consumer.py <bootstrap> <topic> <partitions> <client_id> <duration_s>
"""

import json
import sys
import time

from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING


def main():
    bootstrap, topic, partitions, client_id = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    duration = float(sys.argv[5])
    stats = {"bytes": 0, "records": 0, "throttle_events": 0, "max_throttle_ms": 0, "errors": 0}

    def on_throttle(event):
        if event.throttle_time > 0:
            stats["throttle_events"] += 1
            stats["max_throttle_ms"] = max(stats["max_throttle_ms"], int(event.throttle_time * 1000))

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": client_id,
            "group.id": "quota-" + client_id,
            "enable.auto.commit": False,
            "throttle_cb": on_throttle,
        }
    )
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    start = time.monotonic()
    while time.monotonic() - start < duration:
        for m in c.consume(1000, 0.1):
            if m.error():
                stats["errors"] += 1
            else:
                stats["records"] += 1
                stats["bytes"] += len(m.value())
    stats["elapsed_s"] = time.monotonic() - start
    c.close()
    print(json.dumps(stats, sort_keys=True))


if __name__ == "__main__":
    main()
