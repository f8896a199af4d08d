"""Partition density (issue 26, perf/RESULTS.md "Partition density"): one
broker (BIN, defaults), N partitions in topics of 1,000. Prints the RSS and
disk per idle partition, the same after one 100-byte record in each, the
disk after a clean stop, and how long a restart takes to listen after a
clean stop and after kill -9 (of a broker that wrote one more record to
every partition since that restart).

  ~/.cache/shardlog/test-venv/bin/python perf/density.py BIN N
  (DENSITY_DIR: where the log dir goes, default /tmp)
"""
import os, socket, subprocess, sys, tempfile, time
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka import Producer

BIN = sys.argv[1]; N = int(sys.argv[2]); TOPICS = max(1, N // 1000)
per_topic = N // TOPICS
d = tempfile.mkdtemp(dir=os.environ.get("DENSITY_DIR", "/tmp"))
def free_port():
    """A port outside the ephemeral range (see free_port.py)."""
    out = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "free_port.py")],
                         check=True, capture_output=True, text=True).stdout
    return int(out.split()[0])
port = free_port()
def start():
    t0 = time.monotonic()
    p = subprocess.Popen([BIN, "broker", "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
                          "--override", f"log.dirs={d}/data", "--override", "num.partitions=1"],
                         stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
    for line in p.stderr:
        if b"listening on" in line: break
    ready = time.monotonic() - t0
    # drain stderr in background
    import threading; threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
    return p, ready
def rss(pid):
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmRSS:"): return int(l.split()[1])
def du():
    out = subprocess.run(["du", "-sk", f"{d}/data"], capture_output=True, text=True).stdout
    return int(out.split()[0])
p, _ = start()
base_rss, base_du = rss(p.pid), du()
admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
t0 = time.monotonic()
fs = admin.create_topics([NewTopic(f"dense-{i}", per_topic, 1) for i in range(TOPICS)], request_timeout=600)
for f in fs.values(): f.result()
created = time.monotonic() - t0
time.sleep(2)
idle_rss, idle_du = rss(p.pid), du()
print(f"{N} partitions created in {created:.1f} s; idle: RSS +{idle_rss-base_rss} KiB ({(idle_rss-base_rss)/N:.1f} KiB/partition), disk +{idle_du-base_du} KiB ({(idle_du-base_du)/N:.1f} KiB/partition)", flush=True)
def one_record_each():
    prod = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "linger.ms": 50, "acks": "1"})
    for i in range(TOPICS):
        for part in range(per_topic):
            prod.produce(f"dense-{i}", b"x" * 100, partition=part)
            prod.poll(0)
    left = prod.flush(120)
    assert left == 0, f"{left} records not delivered"
one_record_each()
time.sleep(2)
data_rss, data_du = rss(p.pid), du()
print(f"one 100-byte record in each: RSS +{data_rss-base_rss} KiB ({(data_rss-base_rss)/N:.1f} KiB/partition), disk +{data_du-base_du} KiB ({(data_du-base_du)/N:.1f} KiB/partition)", flush=True)
p.terminate(); p.wait()
print(f"after a clean stop: disk +{du()-base_du} KiB", flush=True)
p, ready = start()
print(f"clean restart: listening after {ready:.2f} s", flush=True)
# Another record in each before the kill, so every active segment was
# written (and pre-allocated) since the restart, as on a busy broker.
one_record_each()
os.kill(p.pid, 9); p.wait()
p, ready = start()
print(f"restart after kill -9: listening after {ready:.2f} s", flush=True)
p.terminate(); p.wait()
subprocess.run(["rm", "-rf", d])
