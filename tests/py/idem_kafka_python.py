"""kafka-python's default producer (idempotent in 3.x) sends N messages,
then a group-less consumer (assign + seek_to_beginning) reads every
partition to its end offset. Prints one JSON line for the Rust test.

usage: idem_kafka_python.py BOOTSTRAP TOPIC PARTITIONS N
"""
import json
import sys

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

bootstrap, topic, partitions, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])

producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", request_timeout_ms=30000)
idempotent = bool(producer.config.get("enable_idempotence"))
futures = [producer.send(topic, value=b"m-%d" % i) for i in range(n)]
producer.flush(timeout=120)
acked = 0
for f in futures:
    f.get(timeout=60)
    acked += 1
producer_id = -1
tm = getattr(producer, "_transaction_manager", None)
if tm is not None:
    pid = getattr(tm, "producer_id_and_epoch", None)
    producer_id = getattr(pid, "producer_id", -1) if pid is not None else -1
producer.close()

consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                         request_timeout_ms=30000)
tps = [TopicPartition(topic, p) for p in range(partitions)]
consumer.assign(tps)
consumer.seek_to_beginning(*tps)
end = consumer.end_offsets(tps)
counts = {}
records = 0
while any(consumer.position(tp) < end[tp] for tp in tps):
    for tp, batch in consumer.poll(timeout_ms=1000, max_records=5000).items():
        for r in batch:
            counts[r.value] = counts.get(r.value, 0) + 1
            records += 1
consumer.close()

expected = {b"m-%d" % i for i in range(n)}
print(json.dumps({
    "idempotent": idempotent,
    "producer_id": producer_id,
    "acked": acked,
    "log_end_sum": sum(end.values()),
    "records": records,
    "distinct": len(counts),
    "duplicates": sum(c - 1 for c in counts.values() if c > 1),
    "missing": len(expected - set(counts)),
    "unexpected": len(set(counts) - expected),
}))
