"""Exactly-once consume-transform-produce with confluent-kafka (KIP-98).

usage: txn_copier.py BOOTSTRAP IN OUT GROUP TXN_ID [--stepped]
  Copies every record of topic IN (3 partitions) to the same partition of
  OUT, value unchanged, in transactions of at most 50 records that also
  commit the consumer positions of GROUP (send_offsets_to_transaction).
  Resumes from GROUP's committed offsets, so a copier killed at any point
  and started again (same TXN_ID: init_transactions fences the old one and
  aborts its open transaction) copies each record exactly once. Prints
  "copied N" after each commit and exits once every partition is copied
  to its end. With --stepped, inside each transaction, once its records
  are flushed to the broker, it prints "in-txn N" and waits for a line on
  stdin before committing (the test kills it there: mid-transaction).
"""
import sys

from confluent_kafka import Consumer, Producer, TopicPartition

bootstrap, src, dst, group, txn_id = sys.argv[1:6]
stepped = "--stepped" in sys.argv[6:]
producer = Producer(
    {
        "bootstrap.servers": bootstrap,
        "transactional.id": txn_id,
        "transaction.timeout.ms": 30000,
        "linger.ms": 5,
    }
)
producer.init_transactions(60)
consumer = Consumer(
    {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "isolation.level": "read_committed",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    }
)
parts = [TopicPartition(src, p) for p in range(3)]
ends = {p: consumer.get_watermark_offsets(TopicPartition(src, p), timeout=10, cached=False)[1] for p in range(3)}
committed = consumer.committed(parts, timeout=30)
consumer.assign([TopicPartition(src, tp.partition, tp.offset if tp.offset >= 0 else 0) for tp in committed])
positions = {tp.partition: max(tp.offset, 0) for tp in committed}
copied = 0
while any(positions[p] < ends[p] for p in range(3)):
    msgs = consumer.consume(50, 1.0)
    msgs = [m for m in msgs if m.error() is None]
    if not msgs:
        continue
    producer.begin_transaction()
    for m in msgs:
        producer.produce(dst, value=m.value(), partition=m.partition())
        positions[m.partition()] = m.offset() + 1
    offsets = [TopicPartition(src, p, positions[p]) for p in range(3)]
    producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), 60)
    if stepped:
        producer.flush(60)
        print(f"in-txn {copied + len(msgs)}", flush=True)
        sys.stdin.readline()
    producer.commit_transaction(60)
    copied += len(msgs)
    print(f"copied {copied}", flush=True)
consumer.close()
print("done", flush=True)
