"""confluent-kafka (librdkafka) idempotent producer and a checking consumer.

usage:
  idem_confluent.py produce BOOTSTRAP TOPIC PARTITIONS N
      Sends N 100-byte messages with enable.idempotence=true, message i to
      partition i % PARTITIONS with payload "<partition>:<seq>:" padded,
      seq = i // PARTITIONS (the per-partition sequence). Prints
      "progress <delivered>" lines as delivery reports arrive (the Rust
      test breaks connections at fixed progress points), then one JSON line.
  idem_confluent.py consume BOOTSTRAP TOPIC PARTITIONS N
      Reads every partition from the beginning to its high watermark and
      checks each holds seq 0, 1, 2, ... exactly once, in order. Prints one
      JSON line.
"""
import json
import sys

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

mode, bootstrap, topic = sys.argv[1], sys.argv[2], sys.argv[3]
partitions, n = int(sys.argv[4]), int(sys.argv[5])
PROGRESS_EVERY = max(1, n // 100)


def produce():
    delivered, failed, errors = 0, 0, []
    next_report = PROGRESS_EVERY

    def on_delivery(err, _msg):
        nonlocal delivered, failed, next_report
        if err is None:
            delivered += 1
            if delivered >= next_report:
                print("progress %d" % delivered, flush=True)
                next_report += PROGRESS_EVERY
        else:
            failed += 1
            if len(errors) < 10:
                errors.append(str(err))

    transport_errors = []

    def on_error(err):
        if len(transport_errors) < 1000:
            transport_errors.append(err.name())
        if err.fatal():
            errors.append("fatal: %s" % err)

    p = Producer({
        "bootstrap.servers": bootstrap,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 5,
        "message.timeout.ms": 120000,
        "reconnect.backoff.ms": 50,
        "reconnect.backoff.max.ms": 500,
        "error_cb": on_error,
    })
    pad = b"." * 100
    for i in range(n):
        part, seq = i % partitions, i // partitions
        value = (b"%d:%d:" % (part, seq) + pad)[:100]
        while True:
            try:
                p.produce(topic, value=value, partition=part, on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.05)
        if i % 1000 == 0:
            p.poll(0)
    remaining = p.flush(180)
    print(json.dumps({
        "delivered": delivered,
        "failed": failed,
        "unflushed": remaining,
        "errors": errors,
        "transport_errors": len(transport_errors),
    }), flush=True)


def consume():
    c = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "idem-check",
        "enable.auto.commit": False,
        "fetch.max.bytes": 8 << 20,
    })
    ends = {}
    for part in range(partitions):
        _low, high = c.get_watermark_offsets(TopicPartition(topic, part), timeout=30)
        ends[part] = high
    c.assign([TopicPartition(topic, part, -2) for part in range(partitions)])  # OFFSET_BEGINNING
    next_seq = {part: 0 for part in range(partitions)}
    position = {part: 0 for part in range(partitions)}
    duplicates = gaps = bad = 0
    records = 0
    idle = 0
    while any(position[p] < ends[p] for p in range(partitions)) and idle < 60:
        msgs = c.consume(num_messages=10000, timeout=1.0)
        if not msgs:
            idle += 1
            continue
        idle = 0
        for m in msgs:
            if m.error():
                if m.error().code() != KafkaError._PARTITION_EOF:
                    bad += 1
                continue
            records += 1
            part = m.partition()
            position[part] = m.offset() + 1
            fields = m.value().split(b":")
            if len(fields) < 3 or int(fields[0]) != part:
                bad += 1
                continue
            seq = int(fields[1])
            if seq == next_seq[part]:
                next_seq[part] += 1
            elif seq < next_seq[part]:
                duplicates += 1
            else:
                gaps += seq - next_seq[part]
                next_seq[part] = seq + 1
    c.close()
    print(json.dumps({
        "records": records,
        "log_end_sum": sum(ends.values()),
        "complete_per_partition": [next_seq[p] for p in range(partitions)],
        "duplicates": duplicates,
        "gaps": gaps,
        "bad": bad,
    }), flush=True)


produce() if mode == "produce" else consume()
