"""confluent-kafka (librdkafka 2.16) producer then assign()-consumer.

Producer: acks=all, linger.ms=5, explicit partition per message,
compression.type from --compression.
Consumer: no group coordinator is needed: assign() with OFFSET_BEGINNING,
enable.auto.commit=false (group.id is still required by the client config);
isolation.level left at librdkafka's default, read_committed.
"""

import threading
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

from roundtrip import Checker, emit, parse_args, payload


def produce(args):
    p = Producer({
        "bootstrap.servers": args.bootstrap,
        "acks": "all",
        "linger.ms": 5,
        "enable.idempotence": False,
        "compression.type": args.compression,
    })
    state = {"delivered": 0, "errors": 0, "first_error": None}

    def on_delivery(err, _msg):
        if err is None:
            state["delivered"] += 1
        else:
            state["errors"] += 1
            state["first_error"] = state["first_error"] or str(err)

    for seq in range(args.count):
        value = payload(seq, args.size)
        while True:
            try:
                p.produce(args.topic, value, partition=seq % args.partitions, on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.05)
        if seq % 1000 == 0:
            p.poll(0)
    left = p.flush(300)
    return {
        "produced": args.count,
        "delivered": state["delivered"],
        "delivery_errors": state["errors"],
        "first_error": state["first_error"],
        "undelivered_after_flush": left,
    }


def consume(args):
    c = Consumer({
        "bootstrap.servers": args.bootstrap,
        "group.id": "shardlog-test",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": True,
    })
    c.assign([TopicPartition(args.topic, p, OFFSET_BEGINNING) for p in range(args.partitions)])
    check = Checker(args.count, args.partitions, args.size)
    errors = []
    last_progress = time.monotonic()
    while not check.complete() and time.monotonic() - last_progress < args.idle_timeout:
        msgs = c.consume(num_messages=10000, timeout=1.0)
        for m in msgs:
            err = m.error()
            if err is not None:
                if err.code() != KafkaError._PARTITION_EOF and len(errors) < 10:
                    errors.append(str(err))
                continue
            check.see(m.partition(), m.offset(), m.value())
            last_progress = time.monotonic()
    c.close()
    report = check.report()
    report["errors"] = errors
    return report


def main():
    args = parse_args("confluent-kafka round trip")
    result = {}
    if args.mode == "concurrent":
        consumer = threading.Thread(target=lambda: result.__setitem__("consume", consume(args)))
        consumer.start()
        result["produce"] = produce(args)
        consumer.join()
        emit(result)
        return
    if args.mode in ("produce", "both"):
        result["produce"] = produce(args)
    if args.mode in ("consume", "both"):
        result["consume"] = consume(args)
    emit(result)


if __name__ == "__main__":
    main()
