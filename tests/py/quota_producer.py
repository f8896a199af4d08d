"""A flat-out confluent-kafka producer for the client-quota tests
(tests/quotas_clients.rs). Prints one JSON object last:
{"acked_bytes", "acked", "errors", "elapsed_s", "throttle_events",
 "max_throttle_ms"}.

  quota_producer.py <bootstrap> <topic> <client_id> <duration_s> <size> [settings.json]

settings.json: more librdkafka settings (security.protocol, sasl.*), so the
quota can be a SASL user's (`--entity-type users`).
"""

import json
import sys
import time

from confluent_kafka import Producer


def main():
    bootstrap, topic, client_id = sys.argv[1], sys.argv[2], sys.argv[3]
    duration, size = float(sys.argv[4]), int(sys.argv[5])
    stats = {"acked_bytes": 0, "acked": 0, "errors": 0, "throttle_events": 0, "max_throttle_ms": 0}

    def on_throttle(event):
        # KIP-219: the broker's throttle_time_ms, as librdkafka reports it.
        if event.throttle_time > 0:
            stats["throttle_events"] += 1
            stats["max_throttle_ms"] = max(stats["max_throttle_ms"], int(event.throttle_time * 1000))

    conf = {
        "bootstrap.servers": bootstrap,
        "client.id": client_id,
        "acks": "1",
        "linger.ms": 5,
        "batch.size": 65536,
        "queue.buffering.max.kbytes": 4096,
        "throttle_cb": on_throttle,
    }
    if len(sys.argv) > 6:
        with open(sys.argv[6]) as f:
            conf.update(json.load(f))
    p = Producer(conf)

    def on_delivery(err, msg):
        if err is not None:
            stats["errors"] += 1
        else:
            stats["acked"] += 1
            stats["acked_bytes"] += len(msg.value())

    value = b"x" * size
    start = time.monotonic()
    while time.monotonic() - start < duration:
        try:
            p.produce(topic, value, on_delivery=on_delivery)
        except BufferError:
            p.poll(0.01)
            continue
        p.poll(0)
    # Bytes acknowledged within the duration only: the queue is dropped.
    p.poll(0)
    stats["elapsed_s"] = time.monotonic() - start
    counted = dict(stats)
    p.purge(in_queue=True, in_flight=False)
    p.flush(30)
    print(json.dumps(counted, sort_keys=True))


if __name__ == "__main__":
    main()
