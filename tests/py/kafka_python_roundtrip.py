"""kafka-python producer (enable_idempotence=False, acks=all) then a
group-less consumer (group_id=None, assign + seek_to_beginning)."""

import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from roundtrip import Checker, emit, parse_args, payload


def produce(args):
    p = KafkaProducer(
        bootstrap_servers=args.bootstrap,
        acks="all",
        linger_ms=5,
        enable_idempotence=False,
        request_timeout_ms=30000,
    )
    futures = [
        p.send(args.topic, value=payload(seq, args.size), partition=seq % args.partitions)
        for seq in range(args.count)
    ]
    p.flush(timeout=300)
    errors, first_error = 0, None
    for f in futures:
        try:
            f.get(timeout=60)
        except Exception as e:  # the report names it; the Rust test fails
            errors += 1
            first_error = first_error or repr(e)
    p.close()
    return {
        "produced": args.count,
        "delivered": args.count - errors,
        "delivery_errors": errors,
        "first_error": first_error,
    }


def consume(args):
    c = KafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    tps = [TopicPartition(args.topic, p) for p in range(args.partitions)]
    c.assign(tps)
    c.seek_to_beginning(*tps)
    check = Checker(args.count, args.partitions, args.size)
    last_progress = time.monotonic()
    while not check.complete() and time.monotonic() - last_progress < args.idle_timeout:
        for tp, records in c.poll(timeout_ms=1000, max_records=5000).items():
            for r in records:
                check.see(tp.partition, r.offset, r.value)
                last_progress = time.monotonic()
    c.close()
    report = check.report()
    report["errors"] = []
    return report


def main():
    args = parse_args("kafka-python round trip")
    result = {}
    if args.mode in ("produce", "both"):
        result["produce"] = produce(args)
    if args.mode in ("consume", "both"):
        result["consume"] = consume(args)
    emit(result)


if __name__ == "__main__":
    main()
