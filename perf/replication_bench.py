#!/usr/bin/env python3
"""Replication's cost (issue 20), three setups side by side in one run:

  A. three ZooKeeper-mode shardlog brokers, a topic with RF=3 and
     min.insync.replicas=2, producers at acks=all (idempotent, Kafka's
     3.x default);
  B. the same cluster, another topic like it, acks=1;
  C. one broker on embedded metadata, RF=1, acks=1.

  perf/replication_bench.py --shardlog target/release/shardlog
                            [--partitions 6] [--message-size 1024]
                            [--duration 10s] [--warmup 2s] [--dir PARENT]
                            [--override KEY=VALUE ...] [--cluster-only]

(perf/replication_bench.sh finds the test venv and builds the binary.) For
each setup the load generator (`shardlog loadgen`, consumers off, linger.ms
5, batch.size 1000000, the record size given) first runs flat out: its
acknowledged msgs/s is the setup's maximum; then it runs at a fixed rate of
half that, where p99 is read both from the actual send and from the
intended send time (coordinated omission corrected). Every broker is a
single shard; the cluster's brokers are pinned to cores 0, 1, 0 and the
single broker to core 0 (shardlog.cpus); the client is not pinned.

Also measured, during the flat-out run: the host's CPU busy fraction
(/proc/stat; 100% = both cores), the load generator's CPU (its rusage) and
the brokers' CPU (user + system from /proc/PID/stat, all brokers of the
setup summed), each per MB of records the setup acknowledged — for A and B
the brokers' figure is a leader and two followers replicating that MB; and,
from each broker's `zerocopy:` line at shutdown, the bytes its fetch path
copied in user space per byte it sent (consumers are off, so in the
cluster those bytes are the followers' fetches).

Prints one JSON object, then a table with the ratios to C.
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controller_bench import Broker, DiskGuard, ZooKeeper, log, tail  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_s(pids):
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        # utime and stime are fields 14 and 15 of stat(5); [0] is field 3.
        total += int(fields[11]) + int(fields[12])
    return total / CLK_TCK


def host_cpu():
    """(busy, total) jiffies of all CPUs from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    return sum(v) - idle, sum(v)


def children_cpu_s():
    import resource
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def loadgen(args, bootstrap, topic, acks, rf, out, rate=None):
    cmd = [
        args.shardlog, "loadgen", "--bootstrap", bootstrap, "--topic", topic,
        "--partitions", str(args.partitions), "--replication-factor", str(rf),
        "--message-size", str(args.message_size), "--acks", acks,
        "--linger-ms", "5", "--batch-size", "1000000", "--consumers", "0",
        "--duration", args.duration, "--warmup", args.warmup, "--out", out,
    ]
    # Flat out unless a rate is given (loadgen's default is a curve).
    cmd += ["--rate", str(int(rate))] if rate is not None else ["--flat-out"]
    log_path = out + ".log"
    with open(log_path, "w") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        raise RuntimeError(f"loadgen exited {rc}: {tail(log_path)}")
    with open(os.path.join(out, "results.json")) as f:
        point = json.load(f)["points"][0]
    if point["errors"]:
        raise RuntimeError(f"loadgen errors {point['errors_by_code']} ({log_path})")
    return point


def measure(args, root, name, bootstrap, topic, acks, rf, pids):
    """Flat out (max rate, CPU per MB), then half the max rate (p99)."""
    c0, h0, l0 = cpu_s(pids), host_cpu(), children_cpu_s()
    top = loadgen(args, bootstrap, topic, acks, rf, os.path.join(root, f"{name}-max"))
    cpu = cpu_s(pids) - c0
    h1, client = host_cpu(), children_cpu_s() - l0
    host_busy = (h1[0] - h0[0]) / max(1, h1[1] - h0[1])
    mb = top["produced"] * args.message_size / 1e6
    half = loadgen(args, bootstrap, topic, acks, rf, os.path.join(root, f"{name}-half"),
                   rate=top["msgs_per_sec"] / 2)
    out = {
        "max_msgs_per_sec": round(top["msgs_per_sec"]),
        "max_mb_per_sec": round(top["mb_per_sec"], 1),
        "max_p99_ms": round(top["ack_latency"]["p99_us"] / 1000, 2),
        "broker_cpu_ms_per_mb": round(cpu * 1000 / mb, 2),
        "client_cpu_ms_per_mb": round(client * 1000 / mb, 2),
        "host_cpu_busy_during_max": round(host_busy, 3),
        "half_rate_msgs_per_sec": round(half["msgs_per_sec"]),
        "half_p50_ms": round(half["ack_latency"]["p50_us"] / 1000, 2),
        "half_p99_ms": round(half["ack_latency"]["p99_us"] / 1000, 2),
        "half_p99_intended_ms": round((half.get("ack_latency_intended") or {}).get("p99_us", 0) / 1000, 2),
    }
    log(f"{name}: {out}")
    return out


def zerocopy(broker):
    with open(broker.out_path, errors="replace") as f:
        lines = [l for l in f if l.startswith("zerocopy:")]
    if not lines:
        raise RuntimeError(f"broker {broker.id} printed no zerocopy line: {tail(broker.out_path)}")
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", lines[-1])}


def stop(brokers):
    for b in brokers:
        if b.proc.poll() is None:
            b.proc.send_signal(signal.SIGTERM)
    for b in brokers:
        try:
            b.proc.wait(60)
        except subprocess.TimeoutExpired:
            b.proc.kill()
            b.proc.wait()
    return [zerocopy(b) for b in brokers]


def copied_per_sent(lines):
    sent = sum(z.get("sendmsg", 0) + z.get("sendfile", 0) + z.get("glommio", 0) for z in lines)
    copied = sum(z.get("copied", 0) for z in lines)
    by_kind = {k: sum(z.get(k, 0) for z in lines) for k in ("sendmsg", "sendfile", "glommio")}
    return {"sent_bytes": sent, "copied_bytes": copied, "sent_by": by_kind,
            "copied_per_sent": round(copied / sent, 6) if sent else None}


def retention(args):
    """Size retention per partition: flat-out runs write ~1 GB/s and three
    replicas of each; without it the six points fill the disk."""
    return {
        "log.retention.bytes": str(args.retention_bytes),
        "log.retention.check.interval.ms": "1000",
        # Kafka's default keeps a deleted segment's file a minute.
        "log.segment.delete.delay.ms": "1000",
    }


def cluster(args, root):
    zk = ZooKeeper(root, 500)
    brokers = []
    try:
        for i, cpu in zip((1, 2, 3), (0, 1, 0)):
            b = Broker("shardlog", args, root, zk, i)
            b.settings.update(retention(args))
            b.settings.update({
                "min.insync.replicas": "2",
                "default.replication.factor": "3",
                "controlled.shutdown.enable": "false",
                "shardlog.cpus": str(cpu),
            })
            b.settings.update(dict(kv.split("=", 1) for kv in args.override))
            brokers.append(b)
            b.start()
        for b in brokers:
            b.wait_ready()
        guard = DiskGuard(root, 5, brokers)
        boot = ",".join(f"127.0.0.1:{b.port}" for b in brokers)
        pids = [b.proc.pid for b in brokers]
        res = {
            "rf3_acks_all": measure(args, root, "rf3-all", boot, "rf3-all", "all", 3, pids),
            "rf3_acks_1": measure(args, root, "rf3-one", boot, "rf3-one", "1", 3, pids),
        }
        res["cluster_zerocopy"] = copied_per_sent(stop(brokers))
        guard.close()
        if guard.tripped:
            raise RuntimeError(guard.tripped)
        return res
    finally:
        for b in brokers:
            if b.proc is not None and b.proc.poll() is None:
                b.proc.kill()
        zk.stop()


def single(args, root):
    class NoZk:
        def address(self):
            return ""

    b = Broker("shardlog", args, os.path.join(root, "single"), NoZk(), 0)
    del b.settings["zookeeper.connect"]
    for k in list(b.settings):
        if k.startswith("zookeeper.") or k.startswith("controlled."):
            del b.settings[k]
    b.settings["shardlog.cpus"] = "0"
    b.settings.update(retention(args))
    b.start()
    guard = DiskGuard(root, 5, [b])
    try:
        b.wait_ready()
        res = {"rf1_acks_1": measure(args, root, "rf1-one", f"127.0.0.1:{b.port}",
                                     "rf1-one", "1", 1, [b.proc.pid])}
        res["single_zerocopy"] = copied_per_sent(stop([b]))
        if guard.tripped:
            raise RuntimeError(guard.tripped)
        return res
    finally:
        guard.close()
        if b.proc.poll() is None:
            b.proc.kill()


def main():
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shardlog", default=os.path.join(repo, "target/release/shardlog"))
    p.add_argument("--partitions", type=int, default=6)
    p.add_argument("--message-size", type=int, default=1024)
    p.add_argument("--duration", default="10s")
    p.add_argument("--warmup", default="2s")
    p.add_argument("--session-ms", type=int, default=6000)
    p.add_argument("--segment-bytes", type=int, default=64 << 20)
    p.add_argument("--retention-bytes", type=int, default=256 << 20,
                   help="log.retention.bytes of every broker (per partition)")
    p.add_argument("--dir", default=os.path.join(repo, "target"),
                   help="parent of the temp dir (the build's disk, not tmpfs)")
    p.add_argument("--keep", action="store_true")
    p.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                   help="a broker setting for the cluster's brokers (repeatable), "
                        "e.g. shardlog.replica.fetch.session.enable=true")
    p.add_argument("--cluster-only", action="store_true",
                   help="skip setup C (one broker, RF=1): for A/B runs of cluster settings")
    args = p.parse_args()
    root = tempfile.mkdtemp(prefix="replication-bench.", dir=args.dir)
    ok = False
    try:
        os.makedirs(os.path.join(root, "single"))
        t0 = time.time()
        res = cluster(args, root)
        if not args.cluster_only:
            res.update(single(args, root))
        res["seconds"] = round(time.time() - t0, 1)
        ok = True
    finally:
        if ok and not args.keep:
            shutil.rmtree(root, ignore_errors=True)
        else:
            log(f"kept {root}")
    print(json.dumps(res, indent=1))
    c = res.get("rf1_acks_1")
    if c is None:
        for key in ("rf3_acks_all", "rf3_acks_1"):
            r = res[key]
            print(f"| {key} | {r['max_msgs_per_sec']} msgs/s | p99 at 50% {r['half_p99_ms']} ms "
                  f"| broker CPU {r['broker_cpu_ms_per_mb']} ms/MB |")
        return
    print("\n| setup | max msgs/s | ÷ RF=1 acks=1 | p99 at 50% (ms) | p99 intended (ms) "
          "| broker CPU ms/MB | client CPU ms/MB | host CPU busy at max |")
    print("|---|---|---|---|---|---|---|---|")
    for name, key in (("3 brokers RF=3 acks=all min.insync=2", "rf3_acks_all"),
                      ("3 brokers RF=3 acks=1", "rf3_acks_1"),
                      ("1 broker RF=1 acks=1", "rf1_acks_1")):
        r = res[key]
        print(f"| {name} | {r['max_msgs_per_sec']} | {r['max_msgs_per_sec'] / c['max_msgs_per_sec']:.2f} "
              f"| {r['half_p99_ms']} | {r['half_p99_intended_ms']} | {r['broker_cpu_ms_per_mb']} "
              f"| {r['client_cpu_ms_per_mb']} | {r['host_cpu_busy_during_max']:.0%} |")
    z = res["cluster_zerocopy"]
    print(f"\ncluster fetch path: {z['sent_bytes']} bytes sent, {z['copied_bytes']} copied in user space "
          f"({z['copied_per_sent']} per byte sent; by sendmsg from the batch cache / sendfile from "
          f"segment files / glommio: {z['sent_by']['sendmsg']} / {z['sent_by']['sendfile']} / "
          f"{z['sent_by']['glommio']})")


if __name__ == "__main__":
    main()
