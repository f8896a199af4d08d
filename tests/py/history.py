"""The Jepsen-style history check (CLUSTER.md §4), reusable by any cluster
test: a producer that records every acknowledged (partition, offset, value),
a drain that reads every partition from its start, and the check that
compares the two. Used by tests/cluster_replication.rs; other tests may
call it the same way (`run_py_script(.., "history.py", ..)`).

  produce <bootstrap> <topic> <partitions> <acked_file> [options]
      --count=N          stop after N records (default: until --stop-file exists)
      --stop-file=PATH   stop producing once PATH exists
      --acks=all|1|0     (default all)
      --idempotence=1|0  (default 1)
      --client=confluent|kafka-python   (default confluent: librdkafka, fast)
      --port-map=A:B,... kafka-python only: connect to port B whenever
                         metadata says A (reach brokers around a proxy)
      --rate=N           at most N records/s (default unlimited)
      --timeout-ms=N     message.timeout.ms / delivery timeout (default 120000)
      --producer=NAME    the value prefix (default "p")
      --retries=N        the client's retries (default: the client's own)
      --partition=P      every record to partition P (default: i % partitions)
    Record i goes to partition i % partitions with value "<producer>-<i>", so
    one producer's values grow in each partition. Writes one line
    "<partition> <offset> <value>" per acknowledged record to acked_file;
    prints {"sent","acked","failed","errors":{name:count}} last.
  drain <bootstrap> <topic> <partitions> <read_file> [--timeout-s=N] [--strict-offsets=1]
      Reads every partition from the beginning up to its high watermark
      (as the brokers answer it after the faults healed); one line
      "<partition> <offset> <value> <leader_epoch>" per record.
      --strict-offsets=1: a fetch answered OFFSET_OUT_OF_RANGE fails the
      drain naming the partition and the broker's message (auto.offset.reset
      =error), instead of the client's default jump to the partition's end.
  check <acked_file> <read_file>
      Prints the report (see check()); exit status 0 either way: the
      caller asserts on the fields it needs.
"""

import json
import os
import sys
import time


def parse_opts(args):
    opts = {}
    rest = []
    for a in args:
        if a.startswith("--"):
            k, _, v = a[2:].partition("=")
            opts[k] = v
        else:
            rest.append(a)
    return rest, opts


# ---------------------------------------------------------------------------
# The check: pure, on lists of tuples, so it can be tested on synthetic
# histories (tests/cluster_replication.rs writes such files and runs
# `check` on them).
# ---------------------------------------------------------------------------


def seq_of(value):
    """(producer, sequence) of "<producer>-<i>" (this script's values) or
    "<prefix>.<i>" (kafka-verifiable-producer's with --value-prefix);
    None for foreign values."""
    for sep in ("-", "."):
        producer, _, i = value.rpartition(sep)
        if producer and i.isdigit():
            return producer, int(i)
    return None


def check(acked, read):
    """acked: [(partition, offset, value)]; read: [(partition, offset, value, epoch)].

    lost:        acknowledged values never read (must be empty with unclean
                 election off);
    duplicates:  values read more than once (none with idempotence);
    moved:       acknowledged at one offset, read at another (an ack with
                 offset -1, librdkafka's implicit ack, names no offset and
                 is checked for loss and duplicates only);
    reordered:   per partition, a producer's sequence not increasing with
                 the offset (order kept);
    offsets_not_growing / epochs_not_growing: per partition, read offsets
                 must strictly grow, leader epochs never fall;
    unacked_read: read but never acknowledged (allowed: indeterminate
                 writes whose ack was lost).
    """
    read_at = {}
    duplicates = []
    for p, off, value, _epoch in read:
        if value in read_at:
            duplicates.append({"value": value, "at": [read_at[value], [p, off]]})
        else:
            read_at[value] = [p, off]
    acked_at = {}
    for p, off, value in acked:
        acked_at[value] = [p, off]
    lost = sorted(v for v in acked_at if v not in read_at)
    moved = [
        {"value": v, "acked": a, "read": read_at[v]}
        for v, a in sorted(acked_at.items())
        if v in read_at and a[1] >= 0 and read_at[v] != a
    ]
    unacked_read = sorted(v for v in read_at if v not in acked_at)

    by_partition = {}
    for p, off, value, epoch in read:
        by_partition.setdefault(p, []).append((off, value, epoch))
    reordered = []
    offsets_not_growing = []
    epochs_not_growing = []
    for p, recs in sorted(by_partition.items()):
        # In the order the drain saw them (the log's order).
        last_seq = {}
        last_off = None
        last_epoch = None
        for off, value, epoch in recs:
            if last_off is not None and off <= last_off:
                offsets_not_growing.append({"partition": p, "after": last_off, "offset": off})
            last_off = off
            if epoch is not None and epoch >= 0:
                if last_epoch is not None and epoch < last_epoch:
                    epochs_not_growing.append(
                        {"partition": p, "offset": off, "epoch": epoch, "after": last_epoch}
                    )
                last_epoch = epoch
            s = seq_of(value)
            if s is None:
                continue
            producer, i = s
            if producer in last_seq and i <= last_seq[producer]:
                reordered.append(
                    {"partition": p, "offset": off, "value": value,
                     "after": "%s-%d" % (producer, last_seq[producer])}
                )
            last_seq[producer] = max(i, last_seq.get(producer, i))
    report = {
        "acked": len(acked_at),
        "read": len(read),
        "lost": lost[:50],
        "lost_count": len(lost),
        "duplicates": duplicates[:50],
        "duplicate_count": len(duplicates),
        "moved": moved[:50],
        "moved_count": len(moved),
        "reordered": reordered[:50],
        "reordered_count": len(reordered),
        "offsets_not_growing": offsets_not_growing[:50],
        "epochs_not_growing": epochs_not_growing[:50],
        "unacked_read_count": len(unacked_read),
        "per_partition_read": {str(p): len(r) for p, r in sorted(by_partition.items())},
    }
    report["ok"] = not (
        lost or duplicates or moved or reordered or offsets_not_growing or epochs_not_growing
    )
    return report


def load(path, fields):
    out = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            row = [int(parts[0]), int(parts[1]), parts[2]]
            if fields == 4:
                row.append(int(parts[3]) if len(parts) > 3 else None)
            out.append(tuple(row))
    return out


# ---------------------------------------------------------------------------
# Producer
# ---------------------------------------------------------------------------


def stop_now(opts, i):
    if "count" in opts:
        return i >= int(opts["count"])
    return os.path.exists(opts["stop-file"])


def target_partition(opts, i, partitions):
    if "partition" in opts:
        return int(opts["partition"])
    return i % partitions


def debug_conf(opts):
    """--debug=CONTEXTS: librdkafka's debug log, to --debug-file (a file, so
    that a full stderr pipe never stalls the client)."""
    if "debug" not in opts:
        return {}
    import logging
    log = logging.getLogger("librdkafka")
    log.setLevel(logging.DEBUG)
    h = logging.FileHandler(opts.get("debug-file", "librdkafka.log"))
    h.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    log.addHandler(h)
    return {"debug": opts["debug"], "logger": log}


def produce_confluent(bootstrap, topic, partitions, out, opts):
    from confluent_kafka import Producer

    idem = opts.get("idempotence", "1") == "1"
    acks = opts.get("acks", "all")
    def on_error(err):
        # Client-level errors (a broker down, …) counted; a fatal one is
        # named in the report.
        k = err.name()
        state["client_errors"][k] = state["client_errors"].get(k, 0) + 1
        if err.fatal():
            state["fatal"] = "%s: %s" % (k, err.str())
            print("fatal producer error: %s" % state["fatal"], file=sys.stderr)

    p = Producer({
        "bootstrap.servers": bootstrap,
        "error_cb": on_error,
        "acks": acks,
        "enable.idempotence": idem,
        "linger.ms": 5,
        "message.timeout.ms": int(opts.get("timeout-ms", "120000")),
        "request.timeout.ms": 5000,
        "topic.metadata.refresh.interval.ms": 1000,
        "retry.backoff.ms": 50,
        "reconnect.backoff.max.ms": 500,
        "socket.connection.setup.timeout.ms": 3000,
        **({"retries": int(opts["retries"])} if "retries" in opts else {}),
        **debug_conf(opts),
    })
    name = opts.get("producer", "p")
    state = {"acked": 0, "failed": 0, "errors": {}, "client_errors": {}, "fatal": None}

    def on_delivery(err, msg):
        if err is not None:
            state["failed"] += 1
            k = err.name()
            state["errors"][k] = state["errors"].get(k, 0) + 1
        else:
            state["acked"] += 1
            # librdkafka acknowledges a message implicitly, with no offset,
            # when a later batch of its partition was acknowledged while
            # this one's own answer was lost (rd_kafka_dr_implicit_ack: a
            # broker killed with the request in flight): -1 then.
            offset = msg.offset()
            if offset is None:
                offset = -1
                state["acked_without_offset"] = state.get("acked_without_offset", 0) + 1
            out.write("%d %d %s\n" % (msg.partition(), offset, msg.value().decode()))

    rate = float(opts.get("rate", "0"))
    start = time.monotonic()
    i = 0
    while not stop_now(opts, i):
        if rate > 0:
            ahead = i / rate - (time.monotonic() - start)
            if ahead > 0:
                p.poll(min(ahead, 0.05))
                continue
        try:
            p.produce(topic, value=("%s-%d" % (name, i)).encode(),
                      partition=target_partition(opts, i, partitions), on_delivery=on_delivery)
            i += 1
        except BufferError:
            p.poll(0.05)
        p.poll(0)
    left = p.flush(int(opts.get("timeout-ms", "120000")) / 1000 + 10)
    return {"sent": i, "acked": state["acked"], "failed": state["failed"],
            "errors": state["errors"], "unflushed": left,
            "client_errors": state["client_errors"], "fatal": state["fatal"],
            "acked_without_offset": state.get("acked_without_offset", 0)}


def produce_kafka_python(bootstrap, topic, partitions, out, opts):
    import kafka
    import kafka.cluster

    mapping = {}
    for pair in filter(None, opts.get("port-map", "").split(",")):
        a, b = pair.split(":")
        mapping[int(a)] = int(b)
    if mapping:
        original = kafka.cluster.ClusterMetadata.broker_metadata

        class Mapped:
            """A broker's metadata with another port (everything else as is)."""

            def __init__(self, md, port):
                self._md = md
                self.port = port

            def __getattr__(self, name):
                return getattr(self._md, name)

        def mapped(self, broker_id):
            md = original(self, broker_id)
            if md is not None and md.port in mapping:
                md = Mapped(md, mapping[md.port])
            return md

        kafka.cluster.ClusterMetadata.broker_metadata = mapped
    idem = opts.get("idempotence", "1") == "1"
    acks = opts.get("acks", "all")
    p = kafka.KafkaProducer(
        bootstrap_servers=bootstrap,
        acks=acks if acks == "all" else int(acks),
        enable_idempotence=idem,
        linger_ms=5,
        request_timeout_ms=5000,
        delivery_timeout_ms=int(opts.get("timeout-ms", "120000")),
        metadata_max_age_ms=1000,
        retry_backoff_ms=50,
        reconnect_backoff_max_ms=500,
        max_in_flight_requests_per_connection=1 if not idem else 5,
        **({"retries": int(opts["retries"])} if "retries" in opts else {}),
    )
    name = opts.get("producer", "p")
    state = {"acked": 0, "failed": 0, "errors": {}}

    def ok(value):
        def cb(md):
            state["acked"] += 1
            out.write("%d %d %s\n" % (md.partition, md.offset, value))
        return cb

    def bad(e):
        state["failed"] += 1
        k = type(e).__name__
        state["errors"][k] = state["errors"].get(k, 0) + 1

    rate = float(opts.get("rate", "0"))
    start = time.monotonic()
    i = 0
    while not stop_now(opts, i):
        if rate > 0:
            ahead = i / rate - (time.monotonic() - start)
            if ahead > 0:
                time.sleep(min(ahead, 0.05))
                continue
        value = "%s-%d" % (name, i)
        f = p.send(topic, value=value.encode(), partition=target_partition(opts, i, partitions))
        f.add_callback(ok(value))
        f.add_errback(bad)
        i += 1
    p.flush(int(opts.get("timeout-ms", "120000")) / 1000 + 10)
    p.close(timeout=10)
    return {"sent": i, "acked": state["acked"], "failed": state["failed"],
            "errors": state["errors"], "unflushed": i - state["acked"] - state["failed"]}


def produce(bootstrap, topic, partitions, acked_file, opts):
    with open(acked_file, "w", buffering=1) as out:
        if opts.get("client", "confluent") == "confluent":
            return produce_confluent(bootstrap, topic, partitions, out, opts)
        return produce_kafka_python(bootstrap, topic, partitions, out, opts)


# ---------------------------------------------------------------------------
# Drain
# ---------------------------------------------------------------------------


def describe_metadata(client, topic):
    """The brokers and the topic's partitions as the client's metadata has
    them (for a failure message)."""
    try:
        md = client.list_topics(topic, timeout=10)
    except Exception as e:  # the reason is what the message needs
        return "list_topics failed: %s" % e
    t = md.topics.get(topic)
    parts = "no topic" if t is None else "error=%s partitions=%s" % (
        t.error, {p: (m.leader, m.isrs, str(m.error)) for p, m in sorted(t.partitions.items())})
    return "controller=%s brokers=%s %s" % (
        md.controller_id, sorted(md.brokers), parts)


def drain(bootstrap, topic, partitions, read_file, opts):
    from confluent_kafka import Consumer, KafkaError, TopicPartition, OFFSET_BEGINNING

    strict = opts.get("strict-offsets") == "1"

    def consumer():
        conf = {
            "bootstrap.servers": bootstrap,
            "group.id": "history-drain",
            "enable.auto.commit": False,
            "isolation.level": "read_uncommitted",
            "fetch.wait.max.ms": 100,
        }
        if strict:
            conf["auto.offset.reset"] = "error"
        return Consumer(conf)

    c = consumer()
    since = time.monotonic()
    deadline = since + float(opts.get("timeout-s", "120"))
    # Every partition's high watermark in one ListOffsets per leader
    # (timestamp -1 = latest; a read_uncommitted consumer gets the HW), not
    # one round trip per partition: with 1,000 partitions on a loaded host
    # those took most of the deadline before the first record was read.
    high = {}
    while True:
        try:
            asked = [TopicPartition(topic, p, -1) for p in range(partitions)]
            # Within the drain's deadline (an unreachable broker holds a
            # lookup until its connection times out).
            wait = max(1.0, min(30.0, deadline - time.monotonic()))
            got = c.offsets_for_times(asked, timeout=wait)
            bad = [tp for tp in got if tp.error is not None or tp.offset < 0]
            if not bad:
                high = {tp.partition: tp.offset for tp in got}
                break
            why = "%d partitions without a watermark, e.g. %s" % (len(bad), bad[0])
        except Exception as e:  # leaders not yet known: retry until the deadline
            why = str(e)
        if time.monotonic() > deadline:
            raise SystemExit("drain: no watermarks: %s; the metadata the client has: %s"
                             % (why, describe_metadata(c, topic)))
        if time.monotonic() - since > 10:
            # librdkafka takes a partition missing from a topic's metadata
            # for a permanent error (_UNKNOWN_PARTITION) and does not ask
            # again before topic.metadata.refresh.interval.ms (5 min): a
            # broker whose metadata cache lagged ZooKeeper by a moment when
            # it was first asked would fail the drain for good. A new
            # client asks again; a broker that still lacks it fails at the
            # deadline, naming what it answers.
            sys.stderr.write("drain: %s after 10 s (%s); a new consumer asks again\n"
                             % (why, describe_metadata(c, topic)))
            c.close()
            c = consumer()
            since = time.monotonic()
        time.sleep(0.2)
    todo = {p for p, hi in high.items() if hi > 0}
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(todo)])
    count = 0
    with open(read_file, "w") as out:
        while todo:
            if time.monotonic() > deadline:
                raise SystemExit("drain: timed out with partitions %s short of %s"
                                 % (sorted(todo), {p: high[p] for p in todo}))
            msg = c.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if strict and msg.error().code() == KafkaError._AUTO_OFFSET_RESET:
                    raise SystemExit("drain: offset out of range on partition %d after %d "
                                     "records read: %s" % (msg.partition(), count, msg.error()))
                continue
            p = msg.partition()
            epoch = msg.leader_epoch() if hasattr(msg, "leader_epoch") else None
            out.write("%d %d %s %d\n" % (p, msg.offset(), msg.value().decode(),
                                         -1 if epoch is None else epoch))
            count += 1
            if msg.offset() + 1 >= high[p]:
                todo.discard(p)
    c.close()
    return {"read": count, "high_watermarks": {str(p): h for p, h in sorted(high.items())}}


def main():
    cmd = sys.argv[1]
    rest, opts = parse_opts(sys.argv[2:])
    if cmd == "produce":
        out = produce(rest[0], rest[1], int(rest[2]), rest[3], opts)
    elif cmd == "drain":
        out = drain(rest[0], rest[1], int(rest[2]), rest[3], opts)
    elif cmd == "check":
        out = check(load(rest[0], 3), load(rest[1], 4))
    else:
        raise SystemExit("unknown command " + cmd)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
