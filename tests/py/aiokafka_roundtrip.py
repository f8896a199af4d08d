"""aiokafka producer (acks=all, not idempotent) then a group-less consumer
(group_id=None, assign + seek_to_beginning)."""

import asyncio
import time

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from roundtrip import Checker, emit, parse_args, payload


async def produce(args):
    p = AIOKafkaProducer(
        bootstrap_servers=args.bootstrap,
        acks="all",
        linger_ms=5,
        enable_idempotence=False,
        request_timeout_ms=30000,
    )
    await p.start()
    errors, first_error = 0, None
    try:
        futures = [
            await p.send(args.topic, value=payload(seq, args.size), partition=seq % args.partitions)
            for seq in range(args.count)
        ]
        for result in await asyncio.gather(*futures, return_exceptions=True):
            if isinstance(result, Exception):
                errors += 1
                first_error = first_error or repr(result)
    finally:
        await p.stop()
    return {
        "produced": args.count,
        "delivered": args.count - errors,
        "delivery_errors": errors,
        "first_error": first_error,
    }


async def consume(args):
    c = AIOKafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    await c.start()
    check = Checker(args.count, args.partitions, args.size)
    try:
        tps = [TopicPartition(args.topic, p) for p in range(args.partitions)]
        c.assign(tps)
        await c.seek_to_beginning(*tps)
        last_progress = time.monotonic()
        while not check.complete() and time.monotonic() - last_progress < args.idle_timeout:
            batches = await c.getmany(timeout_ms=1000, max_records=5000)
            for tp, records in batches.items():
                for r in records:
                    check.see(tp.partition, r.offset, r.value)
                    last_progress = time.monotonic()
    finally:
        await c.stop()
    report = check.report()
    report["errors"] = []
    return report


async def run(args):
    result = {}
    if args.mode in ("produce", "both"):
        result["produce"] = await produce(args)
    if args.mode in ("consume", "both"):
        result["consume"] = await consume(args)
    return result


def main():
    args = parse_args("aiokafka round trip")
    emit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
