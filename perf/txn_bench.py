#!/usr/bin/env python3
"""Transactions' cost (issue 25), side by side in one run on one broker:

  idem      an idempotent producer (acks=all, Kafka 3.x's default), no
            transactions;
  txn-10k   a transactional producer, transactions of 10,000 records;
  txn-100   a transactional producer, transactions of 100 records;
  txn-100-unverified
            the same against a second broker (same pinning, started
            beside the first, idle while the others run) with
            `transaction.partition.verification.enable=false`: what
            KIP-890's verification of each transaction's first batch per
            partition costs (txn-100 ÷ txn-100-unverified);
then two consumers read the txn-10k topic from its start to its end:
  read_uncommitted and read_committed (isolation.level).

  perf/txn_bench.py --shardlog target/release/shardlog
                    [--records 1000000] [--small-records 100000]
                    [--message-size 512] [--partitions 6] [--rounds 3]
                    [--dir PARENT] [--keep]

(perf/txn_bench.sh finds the test venv and builds the binary.) Client:
confluent-kafka (librdkafka), linger.ms 5, batch.size 1000000, the same
for every setup; the broker is one shard pinned to core 0
(`shardlog.cpus=0`) on embedded metadata, the client unpinned. A warm-up
idempotent run (100,000 records to its own topic) comes first; then
`--rounds` rounds of the three producers in turn (each round appends to its
setup's topic), then `--rounds` rounds of the two consumers, alternating
which goes first; each figure is the median over the rounds (the host is
shared and noisy: single short runs swing by 2x). Figures:
records/s from the first produce to the last acknowledgement (producers)
or from assignment to the last record (consumers), the broker's CPU seconds
(user + system from /proc/PID/stat) per 100,000 records, and each setup's
ratio to `idem` (producers) or `read_uncommitted` (consumers). The last
line is one JSON object with every figure.
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def free_port():
    """A port outside the ephemeral range (see free_port.py)."""
    out = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "free_port.py")],
                         check=True, capture_output=True, text=True).stdout
    return int(out.split()[0])


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_broker(args, workdir, extra=()):
    port = free_port()
    os.makedirs(workdir, exist_ok=True)
    cmd = [
        args.shardlog,
        "broker",
        "--override", f"log.dirs={workdir}/logs",
        "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
        "--override", "shardlog.cpus=0",
        "--override", "num.io.threads=1",
        "--override", "transaction.state.log.num.partitions=4",
        "--override", "offsets.topic.num.partitions=4",
    ]
    for e in extra:
        cmd += ["--override", e]
    log = open(f"{workdir}/broker.log", "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, f"127.0.0.1:{port}"
        except OSError:
            time.sleep(0.2)
    proc.kill()
    sys.exit("broker did not start; see " + f"{workdir}/broker.log")


def producer_conf(bootstrap, txn_id=None):
    conf = {
        "bootstrap.servers": bootstrap,
        "linger.ms": 5,
        "batch.size": 1000000,
        "enable.idempotence": True,
        "acks": "all",
        "queue.buffering.max.messages": 1000000,
        "queue.buffering.max.kbytes": 1048576,
    }
    if txn_id:
        conf["transactional.id"] = txn_id
    return conf


def produce(bootstrap, topic, records, size, partitions, txn_size, pid):
    payload = b"x" * size
    p = Producer(producer_conf(bootstrap, f"bench-{topic}" if txn_size else None))
    if txn_size:
        p.init_transactions(30)
    failed = []

    def on_delivery(err, _msg):
        if err is not None:
            failed.append(err)

    cpu0, t0 = cpu_seconds(pid), time.time()
    sent = 0
    while sent < records:
        n = min(txn_size or records, records - sent)
        if txn_size:
            p.begin_transaction()
        for i in range(n):
            while True:
                try:
                    p.produce(topic, payload, partition=(sent + i) % partitions, on_delivery=on_delivery)
                    break
                except BufferError:
                    p.poll(0.01)
        if txn_size:
            p.commit_transaction(60)
        sent += n
    p.flush(120)
    elapsed, cpu = time.time() - t0, cpu_seconds(pid) - cpu0
    if failed:
        sys.exit(f"{topic}: {len(failed)} deliveries failed: {failed[0]}")
    return {"records_per_s": records / elapsed, "broker_cpu_s_per_100k": cpu / records * 1e5,
            "seconds": elapsed}


def consume(bootstrap, topic, partitions, expected, level, pid):
    c = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"bench-{level}",
        "isolation.level": level,
        "enable.auto.commit": False,
        "fetch.max.bytes": 52428800,
        "max.partition.fetch.bytes": 10485760,
    })
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    cpu0, t0 = cpu_seconds(pid), time.time()
    got = 0
    deadline = t0 + 300
    while got < expected and time.time() < deadline:
        for m in c.consume(10000, 0.5):
            if m.error() is None:
                got += 1
    elapsed, cpu = time.time() - t0, cpu_seconds(pid) - cpu0
    c.close()
    if got != expected:
        sys.exit(f"{level}: read {got} of {expected}")
    return {"records_per_s": got / elapsed, "broker_cpu_s_per_100k": cpu / got * 1e5,
            "seconds": elapsed}


def median_run(runs):
    """The median of each figure over the rounds, and every round's rate."""
    def median(xs):
        xs = sorted(xs)
        return xs[len(xs) // 2]
    return {
        "records_per_s": median([r["records_per_s"] for r in runs]),
        "broker_cpu_s_per_100k": median([r["broker_cpu_s_per_100k"] for r in runs]),
        "rounds_records_per_s": [round(r["records_per_s"]) for r in runs],
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shardlog", required=True)
    ap.add_argument("--records", type=int, default=1000000)
    ap.add_argument("--small-records", type=int, default=100000)
    ap.add_argument("--message-size", type=int, default=512)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--keep", action="store_true",
                    help="keep the brokers' work dir (logs, broker.log) afterwards")
    args = ap.parse_args()
    workdir = tempfile.mkdtemp(prefix="txn-bench.", dir=args.dir)
    proc, bootstrap = start_broker(args, workdir)
    proc2, bootstrap2 = start_broker(
        args, f"{workdir}/unverified", ["transaction.partition.verification.enable=false"])
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        topics = ["warmup", "idem", "txn-10k", "txn-100"]
        for f in admin.create_topics([NewTopic(t, args.partitions, 1) for t in topics]).values():
            f.result(30)
        admin2 = AdminClient({"bootstrap.servers": bootstrap2})
        for f in admin2.create_topics([NewTopic("txn-100", args.partitions, 1)]).values():
            f.result(30)
        time.sleep(1)
        produce(bootstrap, "warmup", 100000, args.message_size, args.partitions, 0, proc.pid)
        runs = {}
        for _ in range(args.rounds):
            for name, (boot, pid), topic, records, txn in [
                ("idem", (bootstrap, proc.pid), "idem", args.records, 0),
                ("txn-10k", (bootstrap, proc.pid), "txn-10k", args.records, 10000),
                ("txn-100", (bootstrap, proc.pid), "txn-100", args.small_records, 100),
                ("txn-100-unverified", (bootstrap2, proc2.pid), "txn-100", args.small_records, 100),
            ]:
                runs.setdefault(name, []).append(
                    produce(boot, topic, records, args.message_size, args.partitions, txn, pid))
        for r in range(args.rounds):
            levels = ["read_uncommitted", "read_committed"]
            for level in levels if r % 2 == 0 else levels[::-1]:
                runs.setdefault(level, []).append(
                    consume(bootstrap, "txn-10k", args.partitions, args.records, level, proc.pid))
        out = {name: median_run(rs) for name, rs in runs.items()}
    finally:
        for p in (proc, proc2):
            p.terminate()
            p.wait(30)
        # The logs are gigabytes: removed unless asked for.
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    base_p, base_c = out["idem"]["records_per_s"], out["read_uncommitted"]["records_per_s"]
    print(f"{'setup':<18}{'records/s':>12}{'ratio':>8}{'broker CPU s/100k':>20}")
    for name, base in [("idem", base_p), ("txn-10k", base_p), ("txn-100", base_p),
                       ("txn-100-unverified", base_p),
                       ("read_uncommitted", base_c), ("read_committed", base_c)]:
        r = out[name]
        r["ratio"] = r["records_per_s"] / base
        print(f"{name:<18}{r['records_per_s']:>12.0f}{r['ratio']:>8.2f}{r['broker_cpu_s_per_100k']:>20.3f}")
    out["config"] = {"records": args.records, "small_records": args.small_records,
                     "message_size": args.message_size, "partitions": args.partitions,
                     "rounds": args.rounds}
    print(json.dumps(out))


main()
