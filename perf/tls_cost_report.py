#!/usr/bin/env python3
"""The Markdown report of perf/tls_cost.sh from OUT/runs.tsv and OUT/run.env.

Every figure is the median over rounds; a ratio is the median of the
per-round ratios (each round measured both sides back to back, as
perf/compare.sh does), with their range. Broker CPU s/GB = the broker's
user+system seconds over the client's run / 10^9 record bytes (1 KiB
records); cores busy = CPU seconds / wall seconds of the client's run.
"""
import statistics
import sys
from collections import defaultdict
from pathlib import Path

out = Path(sys.argv[1])
env = dict(
    line.split("=", 1) for line in (out / "run.env").read_text().splitlines() if "=" in line
)
rows = []
lines = (out / "runs.tsv").read_text().splitlines()
head = lines[0].split("\t")
for line in lines[1:]:
    r = dict(zip(head, line.split("\t")))
    if r.get("mb_per_sec") in (None, "", "FAILED"):
        rows.append(dict(r, failed=True))
        continue
    r["failed"] = False
    for k in ("mb_per_sec", "broker_cpu_s", "client_cpu_s", "wall_s"):
        r[k] = float(r[k])
    r["records"] = int(r["records"])
    gb = r["records"] * 1024 / 1e9
    r["cpu_gb"] = r["broker_cpu_s"] / gb if gb else float("nan")
    r["client_busy"] = r["client_cpu_s"] / r["wall_s"]
    r["broker_busy"] = r["broker_cpu_s"] / r["wall_s"]
    rows.append(r)

# (broker, protocol, case, client) -> round -> row
cell = defaultdict(dict)
failed = defaultdict(int)
for r in rows:
    key = (r["broker"], r["protocol"], r["case"], r["client"])
    if r["failed"]:
        failed[key] += 1
    else:
        cell[key][r["round"]] = r


def med(key, field):
    v = [r[field] for r in cell.get(key, {}).values()]
    return statistics.median(v) if v else None


def ratio(a, b, field):
    """Median and range of per-round field(a) / field(b)."""
    ra, rb = cell.get(a, {}), cell.get(b, {})
    v = [ra[k][field] / rb[k][field] for k in ra if k in rb and rb[k][field]]
    if not v:
        return None
    return statistics.median(v), min(v), max(v), len(v)


def fmt(x, d=1):
    return "–" if x is None else f"{x:.{d}f}"


def fmt_ratio(r):
    if r is None:
        return "–"
    m, lo, hi, n = r
    return f"**{m:.2f}** ({lo:.2f}–{hi:.2f})" if n > 1 else f"**{m:.2f}**"


cases = [("produce", "loadgen"), ("produce", "rdkafka_performance"),
         ("consume", "loadgen"), ("consume", "rdkafka_performance")]
cases = [c for c in cases if any(k[2:] == c for k in cell) or any(k[2:] == c for k in failed)]
label = {"produce": "produce 1 KiB acks=1", "consume": "consume from memory"}

print(f"Run {env.get('started_utc', '?')} – {env.get('ended_utc', '?')} at {env.get('commit', '?')}; "
      f"{env.get('rounds')} rounds, {env.get('duration')} s produce runs, "
      f"{env.get('consume_messages')} records per consume run. Host: {env.get('host', '?')}; "
      f"{env.get('host_at_end', '?')}.")
print()
print("Throughput, MB/s (median over rounds); ratios are medians of per-round ratios (range).")
print()
print("| case | client | shardlog PLAINTEXT | shardlog SSL | shardlog SSL ÷ PLAINTEXT | "
      "Kafka PLAINTEXT | Kafka SSL | Kafka SSL ÷ PLAINTEXT | SSL: shardlog ÷ Kafka |")
print("|---|---|---|---|---|---|---|---|---|")
for case, client in cases:
    k = lambda b, p: (b, p, case, client)  # noqa: E731
    print(f"| {label[case]} | {client} | {fmt(med(k('shardlog', 'PLAINTEXT'), 'mb_per_sec'))} | "
          f"{fmt(med(k('shardlog', 'SSL'), 'mb_per_sec'))} | "
          f"{fmt_ratio(ratio(k('shardlog', 'SSL'), k('shardlog', 'PLAINTEXT'), 'mb_per_sec'))} | "
          f"{fmt(med(k('kafka', 'PLAINTEXT'), 'mb_per_sec'))} | {fmt(med(k('kafka', 'SSL'), 'mb_per_sec'))} | "
          f"{fmt_ratio(ratio(k('kafka', 'SSL'), k('kafka', 'PLAINTEXT'), 'mb_per_sec'))} | "
          f"{fmt_ratio(ratio(k('shardlog', 'SSL'), k('kafka', 'SSL'), 'mb_per_sec'))} |")
print()
print("Broker CPU seconds per GB (median over rounds).")
print()
print("| case | client | shardlog PLAINTEXT | shardlog SSL | Kafka PLAINTEXT | Kafka SSL | "
      "SSL: shardlog ÷ Kafka | shardlog SSL ÷ PLAINTEXT |")
print("|---|---|---|---|---|---|---|---|")
for case, client in cases:
    k = lambda b, p: (b, p, case, client)  # noqa: E731
    print(f"| {label[case]} | {client} | {fmt(med(k('shardlog', 'PLAINTEXT'), 'cpu_gb'), 2)} | "
          f"{fmt(med(k('shardlog', 'SSL'), 'cpu_gb'), 2)} | {fmt(med(k('kafka', 'PLAINTEXT'), 'cpu_gb'), 2)} | "
          f"{fmt(med(k('kafka', 'SSL'), 'cpu_gb'), 2)} | "
          f"{fmt_ratio(ratio(k('shardlog', 'SSL'), k('kafka', 'SSL'), 'cpu_gb'))} | "
          f"{fmt_ratio(ratio(k('shardlog', 'SSL'), k('shardlog', 'PLAINTEXT'), 'cpu_gb'))} |")
print()
print("Cores busy in the same runs, client / broker (CPU s ÷ wall s of the client's run, medians; "
      "≥ 0.90 marks the side that bound the run).")
print()
print("| case | client | shardlog PLAINTEXT | shardlog SSL | Kafka PLAINTEXT | Kafka SSL |")
print("|---|---|---|---|---|---|")


def busy(key):
    c, b = med(key, "client_busy"), med(key, "broker_busy")
    if c is None:
        return "failed" if failed.get(key) else "–"
    bound = [n for n, v in (("client", c), ("broker", b)) if v >= 0.9]
    return f"{c:.2f} / {b:.2f}" + (f" ({', '.join(bound)})" if bound else "")


for case, client in cases:
    k = lambda b, p: (b, p, case, client)  # noqa: E731
    print(f"| {label[case]} | {client} | {busy(k('shardlog', 'PLAINTEXT'))} | {busy(k('shardlog', 'SSL'))} | "
          f"{busy(k('kafka', 'PLAINTEXT'))} | {busy(k('kafka', 'SSL'))} |")
print()
print("Goals (issue: Listeners and TLS):")
print()
print("| goal | client | figure | met |")
print("|---|---|---|---|")


def goal(name, client, r, ok):
    if r is None:
        print(f"| {name} | {client} | – | not measured |")
    else:
        print(f"| {name} | {client} | {fmt_ratio(r)} | {'yes' if ok(r[0]) else 'no'} |")


for client in ("loadgen", "rdkafka_performance"):
    k = lambda b, p, c: (b, p, c, client)  # noqa: E731
    goal("shardlog SSL produce ÷ Kafka SSL produce ≥ 3", client,
         ratio(k("shardlog", "SSL", "produce"), k("kafka", "SSL", "produce"), "mb_per_sec"), lambda x: x >= 3)
    goal("shardlog SSL consume ÷ Kafka SSL consume ≥ 2", client,
         ratio(k("shardlog", "SSL", "consume"), k("kafka", "SSL", "consume"), "mb_per_sec"), lambda x: x >= 2)
    goal("shardlog SSL produce ÷ shardlog PLAINTEXT produce ≥ 0.6", client,
         ratio(k("shardlog", "SSL", "produce"), k("shardlog", "PLAINTEXT", "produce"), "mb_per_sec"),
         lambda x: x >= 0.6)
    for case in ("produce", "consume"):
        goal(f"broker CPU s/GB over SSL, {case}: shardlog ÷ Kafka ≤ 0.5", client,
             ratio(k("shardlog", "SSL", case), k("kafka", "SSL", case), "cpu_gb"), lambda x: x <= 0.5)
if any(k[1] == "SASL_SSL" for k in list(cell) + list(failed)):
    print()
    print("SASL_SSL (PLAIN, user `bench` authorized by prefixed ACLs under AclAuthorizer) against SSL "
          "(User:ANONYMOUS, a super user) on the same broker; MB/s and broker CPU s/GB medians.")
    print()
    print("| case | client | shardlog SSL | shardlog SASL_SSL | shardlog SASL_SSL ÷ SSL | Kafka SSL | "
          "Kafka SASL_SSL | Kafka SASL_SSL ÷ SSL | SASL_SSL: shardlog ÷ Kafka | "
          "CPU s/GB shardlog SASL_SSL ÷ SSL | CPU s/GB SASL_SSL: shardlog ÷ Kafka |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for case, client in cases:
        k = lambda b, p: (b, p, case, client)  # noqa: E731
        print(f"| {label[case]} | {client} | {fmt(med(k('shardlog', 'SSL'), 'mb_per_sec'))} | "
              f"{fmt(med(k('shardlog', 'SASL_SSL'), 'mb_per_sec'))} | "
              f"{fmt_ratio(ratio(k('shardlog', 'SASL_SSL'), k('shardlog', 'SSL'), 'mb_per_sec'))} | "
              f"{fmt(med(k('kafka', 'SSL'), 'mb_per_sec'))} | {fmt(med(k('kafka', 'SASL_SSL'), 'mb_per_sec'))} | "
              f"{fmt_ratio(ratio(k('kafka', 'SASL_SSL'), k('kafka', 'SSL'), 'mb_per_sec'))} | "
              f"{fmt_ratio(ratio(k('shardlog', 'SASL_SSL'), k('kafka', 'SASL_SSL'), 'mb_per_sec'))} | "
              f"{fmt_ratio(ratio(k('shardlog', 'SASL_SSL'), k('shardlog', 'SSL'), 'cpu_gb'))} | "
              f"{fmt_ratio(ratio(k('shardlog', 'SASL_SSL'), k('kafka', 'SASL_SSL'), 'cpu_gb'))} |")
    print()
    print("| case | client | busy shardlog SASL_SSL | busy Kafka SASL_SSL |")
    print("|---|---|---|---|")
    for case, client in cases:
        k = lambda b, p: (b, p, case, client)  # noqa: E731
        print(f"| {label[case]} | {client} | {busy(k('shardlog', 'SASL_SSL'))} | {busy(k('kafka', 'SASL_SSL'))} |")
    print()
    print("Goals (issue: Authentication and authorization):")
    print()
    print("| goal | client | figure | met |")
    print("|---|---|---|---|")
    for client in ("loadgen", "rdkafka_performance"):
        k = lambda b, p, c: (b, p, c, client)  # noqa: E731
        for case in ("produce", "consume"):
            goal(f"shardlog {case} SASL_SSL + ACLs ÷ SSL ≥ 0.95 (authorization ≤ 5 %)", client,
                 ratio(k("shardlog", "SASL_SSL", case), k("shardlog", "SSL", case), "mb_per_sec"),
                 lambda x: x >= 0.95)
        goal("shardlog SASL_SSL produce ÷ Kafka SASL_SSL produce ≥ 3", client,
             ratio(k("shardlog", "SASL_SSL", "produce"), k("kafka", "SASL_SSL", "produce"), "mb_per_sec"),
             lambda x: x >= 3)
        goal("shardlog SASL_SSL consume ÷ Kafka SASL_SSL consume ≥ 2", client,
             ratio(k("shardlog", "SASL_SSL", "consume"), k("kafka", "SASL_SSL", "consume"), "mb_per_sec"),
             lambda x: x >= 2)
if failed:
    print()
    print("Failed runs: " + "; ".join(f"{' '.join(k)} ×{n}" for k, n in sorted(failed.items())))
