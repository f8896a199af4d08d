#!/usr/bin/env python3
"""The controller's duties (issue 19), shardlog and Apache Kafka 3.9 side by
side in one run: topic creation, controlled shutdown and failover after
kill -9 with 1,000 partitions x RF 3 on three ZooKeeper-mode brokers.

  perf/controller_bench.py --shardlog target/release/shardlog --jars DIR
                           [--systems shardlog,kafka] [--partitions 1000]
                           [--session-ms 6000] [--dir PARENT] [--keep]

(perf/controller_bench.sh finds the test venv, builds the binary and
fetches the jars, then runs this.) For each system in turn, never both at
once (two cores):

 1. a fresh standalone ZooKeeper 3.8 (Debian's jars, ZooKeeperServerMain,
    tickTime 500 so session expiry is not rounded up to 2 s buckets) in a
    temp dir under PARENT (default target/, the build's disk, not tmpfs);
 2. brokers 1, 2, 3 on free loopback ports, the same settings for both
    systems: zookeeper.session.timeout.ms, zookeeper.connection.timeout.ms
    =10000, offsets.topic.replication.factor=3, controlled.shutdown.enable
    =true (Kafka's default retries), auto.leader.rebalance.enable=false;
    Kafka with kafka-server-start.sh's JVM flags but -Xmx512m -Xms512m;
    shardlog with shardlog.shards=1;
 3. creation: CreateTopics("bench", 1000, RF 3) through confluent-kafka's
    AdminClient (operation_timeout=60); timed from the call to the future
    resolving and to every broker's Metadata showing all partitions with a
    leader and a full ISR (each broker polled every ~20 ms meanwhile);
 5. controlled shutdown (before the kill, on a fresh cluster, so the victim
    leads a third): SIGTERM to the non-controller leading the most
    partitions; timed to the process exit and to the controller's Metadata
    showing it leads nothing; then it is restarted (same id, dir, port)
    and the run waits until every ISR is full again;
 4. failover: kill -9 of the other non-controller broker; timed until the
    Metadata of every surviving broker shows all partitions with a live
    leader. ZooKeeper's log (timestamps on) says when the victim's session
    expired, which splits the figure into ZooKeeper's part and the
    controller's;
 6. everything SIGKILLed, temp dir removed (kept with --keep or on error).

Metadata is read with a small stdlib client (Metadata v5 with
allow_auto_topic_creation=false) so each poll goes to one named broker —
librdkafka's list_topics() picks any broker it likes; it is used for the
controller id and a final cross-check. Prints one JSON object per system,
then a table of Kafka / shardlog ratios and the goals.
"""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime

from confluent_kafka.admin import AdminClient, NewTopic

TOPIC = "bench"
POLL_S = 0.02
ZK_JARS = ["zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-simple.jar"]


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] controller_bench: {msg}", file=sys.stderr, flush=True)


def free_port():
    """A port outside the ephemeral range (see free_port.py)."""
    out = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "free_port.py")],
                         check=True, capture_output=True, text=True).stdout
    return int(out.split()[0])


def wait_until(what, limit_s, probe, every_s=0.1):
    deadline = time.monotonic() + limit_s
    while True:
        got = probe()
        if got:
            return got
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {limit_s} s waiting for {what}")
        time.sleep(every_s)


# ---------------------------------------------------------------- Metadata


class MetadataConn:
    """One connection to one broker; Metadata v5 for one topic."""

    VERSION = 5

    def __init__(self, port):
        self.port = port
        self.sock = None
        self.corr = 0

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def _recv(self, n):
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed")
            buf += chunk
        return bytes(buf)

    def metadata(self, topic):
        """{partition: (error, leader, replicas, isr)}, controller id, topic
        error; None when the broker cannot be asked."""
        try:
            if self.sock is None:
                self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=5)
                self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.corr += 1
            client = b"controller-bench"
            name = topic.encode()
            body = struct.pack(">hhih", 3, self.VERSION, self.corr, len(client)) + client
            body += struct.pack(">ih", 1, len(name)) + name + b"\x00"  # no auto-create
            self.sock.sendall(struct.pack(">i", len(body)) + body)
            (size,) = struct.unpack(">i", self._recv(4))
            return parse_metadata_v5(self._recv(size), self.corr)
        except (OSError, ConnectionError, struct.error):
            self.close()
            return None


def parse_metadata_v5(b, corr):
    off = 0

    def take(fmt):
        nonlocal off
        v = struct.unpack_from(fmt, b, off)
        off += struct.calcsize(fmt)
        return v if len(v) > 1 else v[0]

    def string():
        nonlocal off
        n = take(">h")
        if n < 0:
            return None
        s = b[off : off + n].decode()
        off += n
        return s

    def int_array():
        nonlocal off
        n = take(">i")
        v = list(struct.unpack_from(f">{n}i", b, off)) if n > 0 else []
        off += 4 * max(n, 0)
        return v

    if take(">i") != corr:
        raise ConnectionError("correlation id mismatch")
    take(">i")  # throttle
    for _ in range(take(">i")):
        take(">i")
        string()
        take(">i")
        string()
    string()  # cluster id
    controller = take(">i")
    parts, topic_error = {}, None
    for _ in range(take(">i")):
        topic_error = take(">h")
        string()
        take(">b")
        for _ in range(take(">i")):
            err, index, leader = take(">hii")
            replicas, isr = int_array(), int_array()
            int_array()  # offline replicas
            parts[index] = (err, leader, replicas, isr)
    return {"partitions": parts, "controller": controller, "topic_error": topic_error}


def all_led_with_full_isr(md, n, rf):
    p = md["partitions"]
    return len(p) == n and all(v[1] >= 0 and len(v[3]) == rf for v in p.values())


def all_led_by_live(md, n, dead):
    p = md["partitions"]
    return len(p) == n and all(v[1] >= 0 and v[1] != dead for v in p.values())


def leader_counts(md):
    counts = {}
    for v in md["partitions"].values():
        counts[v[1]] = counts.get(v[1], 0) + 1
    return counts


# ---------------------------------------------------------------- processes


class ZooKeeper:
    def __init__(self, root, tick_ms):
        self.dir = os.path.join(root, "zk")
        os.makedirs(os.path.join(self.dir, "data"))
        self.port = free_port()
        cfg = os.path.join(self.dir, "zoo.cfg")
        with open(cfg, "w") as f:
            f.write(
                "\n".join(
                    [
                        f"tickTime={tick_ms}",
                        f"dataDir={self.dir}/data",
                        f"clientPort={self.port}",
                        "clientPortAddress=127.0.0.1",
                        "admin.enableServer=false",
                        "maxClientCnxns=0",
                    ]
                )
                + "\n"
            )
        cp = ":".join(os.path.join("/usr/share/java", j) for j in ZK_JARS)
        self.log_path = os.path.join(self.dir, "zookeeper.log")
        self.proc = subprocess.Popen(
            [
                "java", "-Xmx256m", "-XX:+UseSerialGC",
                "-Dorg.slf4j.simpleLogger.showDateTime=true",
                "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSSZ",
                "-cp", cp, "org.apache.zookeeper.server.ZooKeeperServerMain", cfg,
            ],
            stdin=subprocess.DEVNULL, stdout=open(self.log_path, "w"), stderr=subprocess.STDOUT,
        )
        wait_until("ZooKeeper's srvr answer", 60, self.ready)

    def ready(self):
        if self.proc.poll() is not None:
            raise RuntimeError(f"ZooKeeper exited: {tail(self.log_path)}")
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"srvr")
                out = b""
                while chunk := s.recv(4096):
                    out += chunk
            return b"Mode:" in out
        except OSError:
            return False

    def address(self):
        return f"127.0.0.1:{self.port}"

    def events(self, pattern, after_wall):
        """(wall time, line) of log lines matching pattern at or after after_wall."""
        out = []
        with open(self.log_path, errors="replace") as f:
            for line in f:
                if not re.search(pattern, line):
                    continue
                try:
                    t = datetime.strptime(line.split(" ", 1)[0], "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()
                except ValueError:
                    continue
                if t >= after_wall - 0.001:
                    out.append((t, line.strip()))
        return out

    def victim_expiry(self, after_wall):
        """(seconds after after_wall, line) of the expiry of the first session
        whose socket closed at or after after_wall (the killed broker's; a
        cleanly stopped broker's lingering session may expire later)."""
        stamp, closed, expiries = None, None, {}
        with open(self.log_path, errors="replace") as f:
            for line in f:
                try:
                    stamp = datetime.strptime(line.split(" ", 1)[0], "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()
                except ValueError:
                    pass
                if stamp is None or stamp < after_wall - 0.001:
                    continue
                m = re.search(r"closed the socket.*session = (0x[0-9a-f]+)", line)
                if m and closed is None:
                    closed = m.group(1)
                m = re.search(r"Expiring session (0x[0-9a-f]+)", line)
                if m:
                    expiries.setdefault(m.group(1), (round(stamp - after_wall, 3), line.strip()))
        return expiries.get(closed, (None, None))

    def stop(self):
        kill(self.proc)


def du_mib(path):
    """Allocated (not apparent) size of a tree, MiB."""
    total = 0
    for d, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(d, f)).st_blocks * 512
            except OSError:
                pass
    return round(total / (1 << 20), 1)


def tail(path, n=8):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


def kill(proc):
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def common_settings(args, zk):
    return {
        "zookeeper.connect": zk.address(),
        "zookeeper.session.timeout.ms": str(args.session_ms),
        "zookeeper.connection.timeout.ms": "10000",
        "offsets.topic.replication.factor": "3",
        "auto.leader.rebalance.enable": "false",
        "controlled.shutdown.enable": "true",
        # shardlog pre-allocates each active segment in min(64 MiB,
        # log.segment.bytes) steps: 3,000 empty replicas at the 1 GiB
        # default take ~195 GB of disk. Nothing is produced here.
        "log.segment.bytes": str(args.segment_bytes),
    }


class Broker:
    """One broker process of either system; restartable with its id, port and dir."""

    def __init__(self, system, args, root, zk, broker_id):
        self.system, self.args, self.id = system, args, broker_id
        self.dir = os.path.join(root, f"broker{broker_id}")
        self.log_dir = os.path.join(self.dir, "logs")
        os.makedirs(self.log_dir)
        self.port = free_port()
        self.settings = dict(common_settings(args, zk))
        self.settings.update(
            {
                "broker.id": str(broker_id),
                "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
                "log.dirs": self.log_dir,
            }
        )
        self.proc = None
        self.starts = 0

    def start(self):
        self.starts += 1
        self.out_path = os.path.join(self.dir, f"out.{self.starts}.log")
        out = open(self.out_path, "w")
        if self.system == "shardlog":
            cmd = [self.args.shardlog, "broker"]
            for k, v in list(self.settings.items()) + [("shardlog.shards", "1")]:
                cmd += ["--override", f"{k}={v}"]
            env = dict(os.environ, RUST_LOG=os.environ.get("RUST_LOG", "warn"))
            self.ready_path, self.ready_text = self.out_path, "shardlog: listening on "
        else:
            props = os.path.join(self.dir, "server.properties")
            with open(props, "w") as f:
                f.writelines(f"{k}={v}\n" for k, v in self.settings.items())
            self.server_log = os.path.join(self.dir, f"server.{self.starts}.log")
            log4j = os.path.join(self.dir, "log4j.properties")
            with open(log4j, "w") as f:
                f.write(
                    "log4j.rootLogger=INFO, file\n"
                    "log4j.appender.file=org.apache.log4j.FileAppender\n"
                    f"log4j.appender.file.File={self.server_log}\n"
                    "log4j.appender.file.layout=org.apache.log4j.PatternLayout\n"
                    "log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
                    "log4j.logger.kafka.request.logger=WARN\n"
                    "log4j.logger.state.change.logger=WARN\n"
                )
            # bin/kafka-server-start.sh + kafka-run-class.sh (3.9), heap for three JVMs.
            cmd = [
                "java", "-Xmx512m", "-Xms512m", "-server", "-XX:+UseG1GC",
                "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
                "-XX:+ExplicitGCInvokesConcurrent", "-XX:MaxInlineLevel=15",
                "-Djava.awt.headless=true", f"-Dlog4j.configuration=file:{log4j}",
                f"-Dkafka.logs.dir={self.dir}", "-cp", os.path.join(self.args.jars, "*"),
                "kafka.Kafka", props,
            ]
            env = dict(os.environ)
            self.ready_path, self.ready_text = self.server_log, "started (kafka.server.KafkaServer)"
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out,
                                     stderr=subprocess.STDOUT, env=env)

    def wait_ready(self, limit_s=120):
        def ready():
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.system} broker {self.id} exited: {tail(self.out_path)}")
            try:
                with open(self.ready_path, errors="replace") as f:
                    return self.ready_text in f.read()
            except OSError:
                return False

        wait_until(f"{self.system} broker {self.id} to start", limit_s, ready)

    def shutdown_lines(self):
        """The broker's own account of its controlled shutdown."""
        path = self.out_path if self.system == "shardlog" else self.server_log
        with open(path, errors="replace") as f:
            return [l.strip() for l in f if re.search(r"[Cc]ontrolled shutdown", l)][-6:]


# ---------------------------------------------------------------- the steps


def admin_for(brokers):
    boot = ",".join(f"127.0.0.1:{b.port}" for b in brokers)
    return AdminClient({"bootstrap.servers": boot, "log_level": 3})


def registered(admin, n):
    try:
        md = admin.list_topics(timeout=5)
    except Exception:  # noqa: BLE001 - not up yet
        return None
    return md if len(md.brokers) == n else None


def step_create(brokers, conns, args):
    admin = admin_for(brokers)
    resolved = {}
    t0 = time.monotonic()
    futures = admin.create_topics(
        [NewTopic(TOPIC, args.partitions, 3)], operation_timeout=60, request_timeout=90
    )
    futures[TOPIC].add_done_callback(lambda f: resolved.setdefault("t", time.monotonic()))
    seen = {}
    deadline = t0 + 300
    while len(seen) < len(conns) or "t" not in resolved:
        if time.monotonic() > deadline:
            raise RuntimeError(f"creation not done in 300 s: future={resolved} metadata={seen}")
        for bid, c in conns.items():
            if bid in seen:
                continue
            md = c.metadata(TOPIC)
            if md is not None and all_led_with_full_isr(md, args.partitions, 3):
                seen[bid] = time.monotonic()
        time.sleep(POLL_S)
    futures[TOPIC].result()  # raises the CreateTopics error, if any
    return {
        "future_s": round(resolved["t"] - t0, 3),
        "metadata_first_broker_s": round(min(seen.values()) - t0, 3),
        "metadata_all_brokers_s": round(max(seen.values()) - t0, 3),
        "metadata_per_broker_s": {str(b): round(t - t0, 3) for b, t in sorted(seen.items())},
    }


def fs_floor(root, dirs):
    """The file system's part of creating `dirs` partition logs, done
    alone (no broker): a directory and three small files in each (a new
    shardlog log makes its directory, `partition.metadata` and the first
    `.log`; Kafka more), then one syncfs. Left in place until the run's
    temp dir goes, so it does not free inodes right before the brokers
    allocate theirs. The host's floor under the creation figure."""
    import ctypes
    base = os.path.join(root, "fs-floor")
    os.makedirs(base)
    t0 = time.monotonic()
    for i in range(dirs):
        d = os.path.join(base, f"t-{i}")
        os.mkdir(d)
        for name in ("partition.metadata", "00000000000000000000.log", "leader-epoch-checkpoint"):
            fd = os.open(os.path.join(d, name), os.O_CREAT | os.O_WRONLY, 0o644)
            os.write(fd, b"0\n")
            os.close(fd)
    fd = os.open(base, os.O_RDONLY)
    try:
        ctypes.CDLL(None, use_errno=True).syncfs(fd)
    finally:
        os.close(fd)
    return round(time.monotonic() - t0, 3)


def produce_check(brokers, n):
    """One record to every partition (acks=1, not timed): the leaders the
    Metadata names must take writes. {error name: count}; empty when all
    were acknowledged."""
    from confluent_kafka import Producer

    boot = ",".join(f"127.0.0.1:{b.port}" for b in brokers)
    p = Producer({"bootstrap.servers": boot, "acks": 1, "linger.ms": 5, "log_level": 3,
                  "message.timeout.ms": 20000, "enable.idempotence": False})
    errors, acked = {}, [0]

    def done(err, _msg):
        if err is None:
            acked[0] += 1
        else:
            errors[err.name()] = errors.get(err.name(), 0) + 1

    for part in range(n):
        p.produce(TOPIC, value=b"x", partition=part, on_delivery=done)
        p.poll(0)
    left = p.flush(30)
    return {"acked": acked[0], "errors": errors, "unflushed": left}


def pick_victim(md, exclude):
    counts = leader_counts(md)
    candidates = [b for b in (1, 2, 3) if b not in exclude]
    victim = max(candidates, key=lambda b: (counts.get(b, 0), -b))
    return victim, counts


def step_controlled_shutdown(brokers, conns, controller, args):
    md = conns[controller].metadata(TOPIC)
    victim, counts = pick_victim(md, {controller})
    b = brokers[victim - 1]
    log(f"controlled shutdown of broker {victim} (leads {counts.get(victim, 0)}; controller {controller})")
    t0 = time.monotonic()
    b.proc.send_signal(signal.SIGTERM)
    exit_t = moved_t = out_of_isr_t = None
    deadline = t0 + 180
    while exit_t is None or moved_t is None or out_of_isr_t is None:
        now = time.monotonic()
        if now > deadline:
            break
        if exit_t is None and b.proc.poll() is not None:
            exit_t = now
        if exit_t is not None and now > exit_t + 30:
            break  # leaders never moved: reported as null
        md = conns[controller].metadata(TOPIC)
        if md is not None:
            parts = md["partitions"].values()
            if moved_t is None and all(v[1] != victim and v[1] >= 0 for v in parts):
                moved_t = time.monotonic()
            if out_of_isr_t is None and all(victim not in v[3] for v in parts):
                out_of_isr_t = time.monotonic()
        time.sleep(POLL_S)
    if b.proc.poll() is None:
        raise RuntimeError(f"broker {victim} did not exit 180 s after SIGTERM")
    after = conns[controller].metadata(TOPIC)
    result = {
        "victim": victim,
        "victim_led": counts.get(victim, 0),
        "leaders_before": {str(k): v for k, v in sorted(counts.items())},
        "sigterm_to_exit_s": round(exit_t - t0, 3) if exit_t else None,
        "exit_code": b.proc.returncode,
        "sigterm_to_leaders_moved_s": round(moved_t - t0, 3) if moved_t else None,
        "sigterm_to_out_of_every_isr_s": round(out_of_isr_t - t0, 3) if out_of_isr_t else None,
        "after_exit_partitions_led_by_victim": sum(1 for v in after["partitions"].values() if v[1] == victim),
        "after_exit_leaderless": sum(1 for v in after["partitions"].values() if v[1] < 0),
        "after_exit_isrs_with_victim": sum(1 for v in after["partitions"].values() if victim in v[3]),
        "leaders_after": {str(k): v for k, v in sorted(leader_counts(after).items())},
        "broker_says": b.shutdown_lines(),
    }
    conns[victim].close()
    return result


def step_restart(brokers, conns, admin, controller, victim, args):
    b = brokers[victim - 1]
    t0 = time.monotonic()
    b.start()
    b.wait_ready()
    wait_until("three registered brokers again", 60, lambda: registered(admin, 3))
    ready_t = time.monotonic()
    full_t = None
    deadline = ready_t + args.isr_wait_s
    while time.monotonic() < deadline:
        md = conns[controller].metadata(TOPIC)
        if md is not None and all_led_with_full_isr(md, args.partitions, 3):
            full_t = time.monotonic()
            break
        time.sleep(0.1)
    md = conns[victim].metadata(TOPIC)
    return {
        "restart_to_registered_s": round(ready_t - t0, 3),
        "restart_to_every_isr_full_s": round(full_t - t0, 3) if full_t else None,
        "isrs_not_full_at_failover": None if md is None else
        sum(1 for v in md["partitions"].values() if len(v[3]) != 3),
    }


def step_failover(brokers, conns, zk, controller, exclude, args):
    md = conns[controller].metadata(TOPIC)
    victim, counts = pick_victim(md, {controller} | exclude)
    b = brokers[victim - 1]
    survivors = {bid: c for bid, c in conns.items() if bid != victim}
    log(f"kill -9 of broker {victim} (leads {counts.get(victim, 0)}; controller {controller})")
    conns[victim].close()
    wall0, t0 = time.time(), time.monotonic()
    os.kill(b.proc.pid, signal.SIGKILL)
    seen = {}
    deadline = t0 + 120
    while len(seen) < len(survivors):
        if time.monotonic() > deadline:
            break
        for bid, c in survivors.items():
            if bid in seen:
                continue
            m = c.metadata(TOPIC)
            if m is not None and all_led_by_live(m, args.partitions, victim):
                seen[bid] = (time.monotonic(), m)
        time.sleep(POLL_S)
    b.proc.wait()
    expiry_s, expiry_line = zk.victim_expiry(wall0)
    done = max(t for t, _ in seen.values()) if len(seen) == len(survivors) else None
    last = seen[controller][1] if controller in seen else conns[controller].metadata(TOPIC)
    result = {
        "victim": victim,
        "victim_led": counts.get(victim, 0),
        "leaders_before": {str(k): v for k, v in sorted(counts.items())},
        "kill_to_all_leaders_live_first_broker_s":
            round(min(t for t, _ in seen.values()) - t0, 3) if seen else None,
        "kill_to_all_leaders_live_s": round(done - t0, 3) if done else None,
        "per_broker_s": {str(b): round(t - t0, 3) for b, (t, _) in sorted(seen.items())},
        "session_timeout_ms": args.session_ms,
        "kill_to_zk_session_expiry_s": expiry_s,
        "zk_session_expiry_to_all_leaders_live_s":
            round(done - t0 - expiry_s, 3) if done and expiry_s is not None else None,
        "zk_expiry_line": expiry_line,
        "isrs_with_victim_when_leaders_live": sum(1 for v in last["partitions"].values() if victim in v[3]),
        "leaders_after": {str(k): v for k, v in sorted(leader_counts(last).items())},
    }
    return result


class DiskGuard:
    """Kills every broker when the disk's free space drops below a floor:
    the disk is shared, and a full one breaks more than this run."""

    def __init__(self, path, floor_gib, brokers):
        self.path, self.floor, self.brokers = path, floor_gib * (1 << 30), brokers
        self.tripped = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.watch, daemon=True)
        self.thread.start()

    def watch(self):
        while not self.stop.wait(0.2):
            free = shutil.disk_usage(self.path).free
            if free < self.floor:
                self.tripped = f"disk free space {free / (1 << 30):.2f} GiB < {self.floor / (1 << 30)} GiB"
                log(f"DISK GUARD: {self.tripped}; killing the brokers")
                for b in self.brokers:
                    if b.proc is not None and b.proc.poll() is None:
                        b.proc.kill()
                return

    def close(self):
        self.stop.set()
        self.thread.join()


def run_system(system, args):
    root = tempfile.mkdtemp(prefix=f"controller-bench-{system}-", dir=args.dir)
    zk, brokers, conns, ok, guard = None, [], {}, False, None
    try:
        log(f"{system}: ZooKeeper and three brokers in {root}")
        zk = ZooKeeper(root, args.tick_ms)
        brokers = [Broker(system, args, root, zk, i) for i in (1, 2, 3)]
        guard = DiskGuard(root, args.min_free_gib, brokers)
        t0 = time.monotonic()
        for b in brokers:
            b.start()
        for b in brokers:
            b.wait_ready()
        admin = admin_for(brokers)
        md = wait_until("three registered brokers", 120, lambda: registered(admin, 3))
        started_s = time.monotonic() - t0
        controller = md.controller_id if md.controller_id >= 0 else None
        if controller is None:
            def known():
                m = registered(admin, 3)
                return m.controller_id if m and m.controller_id >= 0 else None

            controller = wait_until("a controller", 60, known)
        conns = {b.id: MetadataConn(b.port) for b in brokers}
        log(f"{system}: up in {started_s:.1f} s, controller {controller}; creating {args.partitions} partitions")
        out = {"system": system, "startup_s": round(started_s, 3), "controller": controller,
               "session_timeout_ms": args.session_ms, "partitions": args.partitions}
        out["fs_floor_s"] = fs_floor(root, 3 * args.partitions)
        log(f"{system}: file system floor ({3 * args.partitions} dirs x 3 files + syncfs) {out['fs_floor_s']} s")
        out["creation"] = step_create(brokers, conns, args)
        log(f"{system}: creation {out['creation']}")
        cs = step_controlled_shutdown(brokers, conns, controller, args)
        out["controlled_shutdown"] = cs
        log(f"{system}: controlled shutdown {cs}")
        out["controlled_shutdown"]["produce_check"] = produce_check(
            [b for b in brokers if b.id != cs["victim"]], args.partitions)
        out["restart"] = step_restart(brokers, conns, admin, controller, cs["victim"], args)
        log(f"{system}: restart {out['restart']}")
        fo = step_failover(brokers, conns, zk, controller, {cs["victim"]}, args)
        out["failover"] = fo
        log(f"{system}: failover {fo}")
        survivors = [b for b in brokers if b.id != fo["victim"]]
        fo["produce_check"] = produce_check(survivors, args.partitions)
        # librdkafka's own view, as a cross-check of the stdlib client.
        t = admin_for(survivors).list_topics(topic=TOPIC, timeout=10).topics[TOPIC]
        out["cross_check_confluent"] = {
            "partitions": len(t.partitions),
            "leaderless_or_dead_leader": sum(1 for p in t.partitions.values()
                                             if p.leader < 0 or p.leader == fo["victim"]),
        }
        out["data_on_disk_mib"] = {str(b.id): du_mib(b.log_dir) for b in brokers}
        ok = True
        return out
    except Exception as e:
        if guard is not None and guard.tripped:
            raise RuntimeError(f"{guard.tripped} ({e})") from e
        raise
    finally:
        if guard is not None:
            guard.close()
        for c in conns.values():
            c.close()
        for b in brokers:
            if b.proc is not None:
                kill(b.proc)
        if zk is not None:
            zk.stop()
        if ok and not args.keep:
            shutil.rmtree(root, ignore_errors=True)
        else:
            if not ok and not args.keep:
                # Keep the logs to read, not the partition data.
                for b in brokers:
                    shutil.rmtree(b.log_dir, ignore_errors=True)
            log(f"{system}: kept {root}")


def ratio(k, s):
    if k is None or s is None or s <= 0:
        return None
    return round(k / s, 2)


def report(results, args):
    rows = [
        ("creation: CreateTopics future", lambda r: r["creation"]["future_s"]),
        ("creation: all brokers' Metadata complete", lambda r: r["creation"]["metadata_all_brokers_s"]),
        ("controlled shutdown: SIGTERM -> exit", lambda r: r["controlled_shutdown"]["sigterm_to_exit_s"]),
        ("controlled shutdown: SIGTERM -> leaders moved", lambda r: r["controlled_shutdown"]["sigterm_to_leaders_moved_s"]),
        ("failover: kill -9 -> all leaders live (all survivors)", lambda r: r["failover"]["kill_to_all_leaders_live_s"]),
        ("failover: kill -9 -> ZooKeeper session expiry", lambda r: r["failover"]["kill_to_zk_session_expiry_s"]),
        ("failover: session expiry -> all leaders live", lambda r: r["failover"]["zk_session_expiry_to_all_leaders_live_s"]),
    ]
    s, k = results.get("shardlog"), results.get("kafka")
    rows.append(("host floor: 3 x partitions dirs x 3 files + syncfs, no broker",
                    lambda r: r["fs_floor_s"]))

    def get(r, f):
        try:
            return f(r) if r else None
        except (KeyError, TypeError):
            return None

    print(f"| figure (seconds) | shardlog | Kafka 3.9.2 | Kafka ÷ shardlog |")
    print("|---|---|---|---|")
    for name, f in rows:
        sv, kv = get(s, f), get(k, f)
        print(f"| {name} | {sv} | {kv} | {ratio(kv, sv)} |")
    if not s:
        return
    budget = args.session_ms / 1000 + 0.5
    creation = max(get(s, rows[0][1]) or 1e9, get(s, rows[1][1]) or 1e9)
    k_creation = (None if get(k, rows[0][1]) is None or get(k, rows[1][1]) is None
                  else max(get(k, rows[0][1]), get(k, rows[1][1])))
    goals = [
        ("creation (future and every broker's Metadata) <= 1 s", creation <= 1.0,
         ratio(k_creation, creation)),
        (f"failover <= session timeout + 0.5 s = {budget} s",
         (get(s, rows[4][1]) or 1e9) <= budget, ratio(get(k, rows[4][1]), get(s, rows[4][1]))),
        ("controlled shutdown (SIGTERM -> exit) <= 1 s",
         (get(s, rows[2][1]) or 1e9) <= 1.0, ratio(get(k, rows[2][1]), get(s, rows[2][1]))),
    ]
    print()
    print("| goal | met | Kafka ÷ shardlog | >= 5x faster than Kafka |")
    print("|---|---|---|---|")
    for name, met, r in goals:
        print(f"| {name} | {'yes' if met else 'NO'} | {r} | {'yes' if r and r >= 5 else 'NO'} |")


def main():
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shardlog", default=os.path.join(repo, "target/release/shardlog"))
    p.add_argument("--jars", required=True, help="tests/java/fetch_jars.sh's folder")
    p.add_argument("--systems", default="shardlog,kafka")
    p.add_argument("--partitions", type=int, default=1000)
    p.add_argument("--session-ms", type=int, default=6000)
    p.add_argument("--tick-ms", type=int, default=500, help="ZooKeeper tickTime")
    p.add_argument("--isr-wait-s", type=float, default=60,
                   help="after the restart, wait this long at most for full ISRs")
    p.add_argument("--dir", default=os.path.join(repo, "target"),
                   help="parent of the temp dirs (the disk target/ is on)")
    p.add_argument("--keep", action="store_true", help="keep the temp dirs")
    p.add_argument("--segment-bytes", type=int, default=1 << 20,
                   help="log.segment.bytes for both systems (bounds shardlog's pre-allocation)")
    p.add_argument("--min-free-gib", type=float, default=3,
                   help="kill the brokers when the disk's free space falls below this")
    args = p.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    results = {}
    for system in args.systems.split(","):
        try:
            results[system] = run_system(system, args)
        except Exception as e:  # noqa: BLE001 - reported, the other system still runs
            log(f"{system}: FAILED: {e}")
            results[system] = {"system": system, "error": str(e)}
        print(json.dumps(results[system]), flush=True)
    report(results, args)
    return 0 if all("error" not in r for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
