"""The soak workload (issue 26), driven by tests/hardening_soak.rs, which
starts the broker, kills it with kill -9 and restarts it on the same port
and log dir while this runs, and samples its memory and file descriptors.

  run <bootstrap> <workdir> --seconds=N [--rate=R]

For N seconds, all at once:
  - idempotent producers (acks=all), one per codec (none, gzip, snappy,
    lz4, zstd), into `soak-idem`;
  - plain producers: acks=1 gzip and acks=all lz4 (checked for loss only:
    a retry after a lost answer may write twice without idempotence) and
    acks=0 zstd (nothing acknowledged, nothing to check) into `soak-plain`;
  - a producer of 1 KiB values into `soak-retention`, whose small segments
    and retention.bytes make the broker roll and delete segments all along;
  - a consumer group (subscribe, auto commit) on soak-idem and soak-plain;
  - ListOffsets: watermarks and offsets by timestamp, in a loop;
  - admin churn: topics created, checked in metadata and deleted, in a loop;
  - connection churn: raw sockets answered ApiVersions, dropped half way
    through a request, or sending a malformed frame, in a loop.
Durable topics have flush.messages=1, so an acknowledged record is flushed
and must survive kill -9.

Then every producer flushes, soak-idem and soak-plain are drained and
checked (tests/py/history.py's check) and one JSON report is printed; the
caller asserts on it. Each producer writes its acknowledged records to
<workdir>/acked-<name>.
"""

import json
import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import history  # noqa: E402

IDEM = "soak-idem"
PLAIN = "soak-plain"
RETENTION = "soak-retention"
DURABLE = {"flush.messages": "1"}
TOPICS = {
    IDEM: (6, DURABLE),
    PLAIN: (4, DURABLE),
    # Segments of 128 KiB, 512 KiB kept per partition, checked for deletion
    # every log.retention.check.interval.ms (the test sets it short).
    RETENTION: (2, {"segment.bytes": "131072", "retention.bytes": "524288"}),
}
# (name, topic, acks, idempotence, codec, value bytes)
PRODUCERS = [
    ("idem-none", IDEM, "all", True, "none", 0),
    ("idem-gzip", IDEM, "all", True, "gzip", 0),
    ("idem-snappy", IDEM, "all", True, "snappy", 0),
    ("idem-lz4", IDEM, "all", True, "lz4", 0),
    ("idem-zstd", IDEM, "all", True, "zstd", 0),
    ("plain-acks1-gzip", PLAIN, "1", False, "gzip", 0),
    ("plain-acksall-lz4", PLAIN, "all", False, "lz4", 0),
    ("plain-acks0-zstd", PLAIN, "0", False, "zstd", 0),
    ("retention", RETENTION, "1", False, "none", 1024),
]

stop = threading.Event()


def count(stats, key, n=1):
    stats[key] = stats.get(key, 0) + n


def client_base(bootstrap):
    # Short backoffs so every client is back soon after a restart.
    return {
        "bootstrap.servers": bootstrap,
        "reconnect.backoff.ms": 50,
        "reconnect.backoff.max.ms": 500,
        "socket.connection.setup.timeout.ms": 3000,
        "topic.metadata.refresh.interval.ms": 2000,
    }


def create_topics(bootstrap):
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(client_base(bootstrap))
    new = [NewTopic(t, p, 1, config=c) for t, (p, c) in TOPICS.items()]
    for topic, fut in admin.create_topics(new, request_timeout=30).items():
        fut.result()
    # Wait until every partition has a leader in metadata.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        md = admin.list_topics(timeout=10)
        if all(t in md.topics and len(md.topics[t].partitions) == p
               and all(pm.leader >= 0 for pm in md.topics[t].partitions.values())
               for t, (p, _) in TOPICS.items()):
            return
        time.sleep(0.2)
    raise SystemExit("soak: topics without leaders after 60 s")


def producer(bootstrap, workdir, spec, rate, report):
    from confluent_kafka import Producer

    name, topic, acks, idem, codec, size = spec
    stats = {"sent": 0, "acked": 0, "failed": 0, "errors": {}, "fatal": None}
    report[name] = stats

    def on_error(err):
        if err.fatal():
            stats["fatal"] = "%s: %s" % (err.name(), err.str())

    p = Producer({
        **client_base(bootstrap),
        "error_cb": on_error,
        "acks": acks,
        "enable.idempotence": idem,
        "compression.codec": codec,
        "linger.ms": 5,
        # A batch larger than a segment is refused (RECORD_LIST_TOO_LARGE,
        # Kafka's rule): the retention topic's segments are 128 KiB.
        **({"batch.size": 65536} if topic == RETENTION else {}),
        "message.timeout.ms": 120000,
        "request.timeout.ms": 5000,
        "retry.backoff.ms": 50,
    })
    partitions = TOPICS[topic][0]
    pad = b"x" * size
    with open(os.path.join(workdir, "acked-" + name), "w") as out:
        def on_delivery(err, msg):
            if err is not None:
                stats["failed"] += 1
                count(stats["errors"], err.name())
                return
            stats["acked"] += 1
            if acks == "0":
                return  # acks=0 acknowledges nothing
            offset = msg.offset()
            # librdkafka's implicit ack names no offset (history.py).
            offset = -1 if offset is None else offset
            value = msg.value()[:msg.value().index(b"|")] if size else msg.value()
            out.write("%d %d %s\n" % (msg.partition(), offset, value.decode()))

        start = time.monotonic()
        i = 0
        while not stop.is_set() and stats["fatal"] is None:
            ahead = i / rate - (time.monotonic() - start)
            if ahead > 0:
                p.poll(min(ahead, 0.05))
                continue
            value = ("%s-%d" % (name, i)).encode()
            if size:
                value += b"|" + pad
            try:
                p.produce(topic, value=value, partition=i % partitions,
                          on_delivery=on_delivery)
                i += 1
            except BufferError:
                p.poll(0.05)
            p.poll(0)
        stats["sent"] = i
        stats["unflushed"] = p.flush(130)


def consumer_group(bootstrap, report):
    from confluent_kafka import Consumer

    stats = {"consumed": 0, "errors": {}, "assignments": 0}
    report["group"] = stats

    def on_assign(_c, parts):
        stats["assignments"] += 1

    c = Consumer({
        **client_base(bootstrap),
        "group.id": "soak-group",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": True,
        "auto.commit.interval.ms": 1000,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 1000,
        "fetch.wait.max.ms": 100,
    })
    c.subscribe([IDEM, PLAIN], on_assign=on_assign)
    while not stop.is_set():
        msg = c.poll(0.2)
        if msg is None:
            continue
        if msg.error():
            count(stats["errors"], msg.error().name())
            continue
        stats["consumed"] += 1
    committed = c.committed(c.assignment(), timeout=10) if c.assignment() else []
    stats["committed_partitions"] = sum(1 for tp in committed if tp.offset >= 0)
    c.close()


def list_offsets(bootstrap, report):
    from confluent_kafka import Consumer, TopicPartition

    stats = {"watermarks": 0, "by_time": 0, "errors": {}}
    report["list_offsets"] = stats
    c = Consumer({**client_base(bootstrap), "group.id": "soak-offsets"})
    parts = [TopicPartition(t, p) for t in (IDEM, PLAIN, RETENTION)
             for p in range(TOPICS[t][0])]
    while not stop.is_set():
        for tp in parts:
            try:
                c.get_watermark_offsets(tp, timeout=2, cached=False)
                stats["watermarks"] += 1
            except Exception as e:  # a restart in progress: counted
                count(stats["errors"], type(e).__name__)
        asked = [TopicPartition(tp.topic, tp.partition, int(time.time() * 1000) - 5000)
                 for tp in parts]
        try:
            for tp in c.offsets_for_times(asked, timeout=5):
                if tp.error is None:
                    stats["by_time"] += 1
                else:
                    count(stats["errors"], tp.error.name())
        except Exception as e:
            count(stats["errors"], type(e).__name__)
        stop.wait(0.2)
    # Segments were deleted: the retention topic starts past offset 0.
    stats["retention_log_start"] = []
    for p in range(TOPICS[RETENTION][0]):
        deadline = time.monotonic() + 30
        while True:
            try:
                low, _ = c.get_watermark_offsets(TopicPartition(RETENTION, p), timeout=5,
                                                 cached=False)
                stats["retention_log_start"].append(low)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    c.close()


def admin_churn(bootstrap, report):
    from confluent_kafka.admin import AdminClient, NewTopic

    stats = {"created": 0, "deleted": 0, "errors": {}, "left": []}
    report["admin"] = stats
    admin = AdminClient(client_base(bootstrap))
    deleted = []
    pending = []
    n = 0
    while not stop.is_set():
        name = "soak-churn-%d" % n
        n += 1
        try:
            admin.create_topics([NewTopic(name, 3, 1)], request_timeout=10)[name].result()
            stats["created"] += 1
            pending.append(name)
            admin.delete_topics([name], request_timeout=10)[name].result()
            stats["deleted"] += 1
            pending.remove(name)
            deleted.append(name)
        except Exception as e:  # a restart in progress: counted, retried below
            count(stats["errors"], type(e).__name__)
        stop.wait(0.5)
    for name in pending:
        try:
            admin.delete_topics([name], request_timeout=30)[name].result()
            deleted.append(name)
        except Exception as e:
            count(stats["errors"], "final-" + type(e).__name__)
    # Every topic whose deletion was acknowledged is gone from metadata.
    md = admin.list_topics(timeout=30)
    stats["left"] = sorted(t for t in deleted if t in md.topics)


def api_versions_frame(correlation):
    client = b"soak"
    body = struct.pack(">hhih", 18, 0, correlation, len(client)) + client
    return struct.pack(">i", len(body)) + body


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def connection_churn(bootstrap, report):
    host, port = bootstrap.rsplit(":", 1)
    stats = {"answered": 0, "dropped_mid_request": 0, "malformed_closed": 0,
             "errors": {}, "wrong_answers": 0}
    report["connections"] = stats
    i = 0
    while not stop.is_set():
        i += 1
        try:
            with socket.create_connection((host, int(port)), timeout=5) as s:
                if i % 10 == 3:
                    # Half a request, then gone.
                    s.sendall(api_versions_frame(i)[:7])
                    stats["dropped_mid_request"] += 1
                elif i % 10 == 7:
                    # A frame whose header names no API: the broker closes.
                    s.sendall(struct.pack(">ihhi", 8, 32000, 0, i))
                    if s.recv(64) == b"":
                        stats["malformed_closed"] += 1
                    else:
                        stats["wrong_answers"] += 1
                else:
                    s.sendall(api_versions_frame(i))
                    head = recv_exact(s, 8)
                    if head is None:
                        count(stats["errors"], "closed")
                    elif struct.unpack(">ii", head)[1] != i:
                        stats["wrong_answers"] += 1
                    else:
                        recv_exact(s, struct.unpack(">i", head[:4])[0] - 4)
                        stats["answered"] += 1
        except OSError as e:  # refused or reset while the broker restarts
            count(stats["errors"], type(e).__name__)
            stop.wait(0.1)
        stop.wait(0.02)


def check_topic(bootstrap, workdir, topic, names, report):
    acked = []
    for name in names:
        acked += history.load(os.path.join(workdir, "acked-" + name), 3)
    read_file = os.path.join(workdir, "read-" + topic)
    drained = history.drain(bootstrap, topic, TOPICS[topic][0], read_file,
                            {"timeout-s": "300"})
    result = history.check(acked, history.load(read_file, 4))
    result["drained"] = drained["read"]
    report[topic] = result


def run(bootstrap, workdir, opts):
    seconds = float(opts["seconds"])
    rate = float(opts.get("rate", "200"))
    create_topics(bootstrap)
    report = {"producers": {}}
    # --only=a,b,... runs a part of the workload (names: producers,
    # consumer_group, list_offsets, admin_churn, connection_churn), to find
    # which part a trend comes from; nothing is checked then.
    only = set(opts["only"].split(",")) if "only" in opts else None
    failures = []

    def guarded(target):
        def body(*args):
            try:
                target(*args)
            except BaseException as e:  # reported, never silent
                failures.append("%s: %r" % (target.__name__, e))
        return body

    threads = [threading.Thread(target=guarded(producer),
                                args=(bootstrap, workdir, spec, rate, report["producers"]))
               for spec in PRODUCERS if only is None or "producers" in only]
    threads += [threading.Thread(target=guarded(f), args=(bootstrap, report))
                for f in (consumer_group, list_offsets, admin_churn, connection_churn)
                if only is None or f.__name__ in only]
    for t in threads:
        t.start()
    stop.wait(seconds)
    stop.set()
    for t in threads:
        t.join()
    report["thread_failures"] = failures
    if only is not None:
        return report
    idem = [p[0] for p in PRODUCERS if p[1] == IDEM]
    plain = [p[0] for p in PRODUCERS if p[1] == PLAIN and p[2] != "0"]
    check_topic(bootstrap, workdir, IDEM, idem, report)
    check_topic(bootstrap, workdir, PLAIN, plain, report)
    return report


def main():
    rest, opts = history.parse_opts(sys.argv[2:])
    if sys.argv[1] != "run":
        raise SystemExit("unknown command " + sys.argv[1])
    print(json.dumps(run(rest[0], rest[1], opts)))


if __name__ == "__main__":
    main()
