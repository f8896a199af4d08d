#!/usr/bin/env python3
"""An old consumer's read rate: Fetch v0..v3 from the beginning of a topic.

`downconvert.py HOST:PORT TOPIC PARTITIONS VERSION [PARTITION_MAX_BYTES]`
reads every partition of TOPIC (0..PARTITIONS-1) from offset 0 up to the
high watermark of its first answer with raw Fetch requests of VERSION
(v0/v1 get magic 0 message sets, v2/v3 magic 1: a broker holding v2 batches
down-converts them, as Kafka's `message.downconversion.enable` allows; v4,
the baseline, gets the v2 batches as stored), one
request for all partitions at a time, as an old client does. Each
partition's next offset comes from the last whole entry of its message set
(a trailing partial entry is skipped, as old clients do). It prints
"records N bytes B seconds S MB/s X" (10^6 bytes of message-set bytes per
second) and exits 1 on any error code.

perf/downconvert_cost.sh runs it against shardlog and Kafka 3.9.
"""

import socket
import struct
import sys
import time


def recv_exact(s, n):
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = s.recv_into(view[got:], n - got)
        if k == 0:
            raise ConnectionError("broker closed the connection")
        got += k
    return buf


def call(s, api_key, version, corr, body):
    client = b"downconvert"
    header = struct.pack(">hhih", api_key, version, corr, len(client)) + client
    msg = header + body
    s.sendall(struct.pack(">i", len(msg)) + msg)
    size = struct.unpack(">i", recv_exact(s, 4))[0]
    resp = recv_exact(s, size)
    if struct.unpack(">i", resp[:4])[0] != corr:
        raise ValueError("wrong correlation id")
    return memoryview(resp)[4:]


def fetch_body(version, topic, offsets, max_bytes):
    t = topic.encode()
    body = struct.pack(">iii", -1, 500, 1)  # replica_id, max_wait_ms, min_bytes
    if version >= 3:
        body += struct.pack(">i", 64 * 1024 * 1024)  # max_bytes (KIP-74)
    if version >= 4:
        body += struct.pack(">b", 0)  # isolation_level READ_UNCOMMITTED
    body += struct.pack(">ih", 1, len(t)) + t + struct.pack(">i", len(offsets))
    for p, off in sorted(offsets.items()):
        body += struct.pack(">iqi", p, off, max_bytes)
    return body


def parse(version, resp):
    """partition -> (error, high_watermark, message set bytes)."""
    pos = 4 if version >= 1 else 0  # throttle_time_ms
    out = {}
    (ntopics,) = struct.unpack_from(">i", resp, pos)
    pos += 4
    for _ in range(ntopics):
        (tlen,) = struct.unpack_from(">h", resp, pos)
        pos += 2 + tlen
        (nparts,) = struct.unpack_from(">i", resp, pos)
        pos += 4
        for _ in range(nparts):
            p, err, hw = struct.unpack_from(">ihq", resp, pos)
            pos += 14
            if version >= 4:
                pos += 8  # last_stable_offset
                (naborted,) = struct.unpack_from(">i", resp, pos)
                pos += 4 + max(naborted, 0) * 16
            (size,) = struct.unpack_from(">i", resp, pos)
            pos += 4
            out[p] = (err, hw, resp[pos:pos + size])
            pos += size
    return out


def next_offset(ms, current):
    """The offset after the last whole entry of a message set, and the
    number of records (the data is uncompressed): a magic 0/1 entry is one
    message; a v2 batch (Fetch v4+) holds last_offset_delta + 1 records."""
    pos, n, last = 0, 0, None
    while pos + 12 <= len(ms):
        off, size = struct.unpack_from(">qi", ms, pos)
        if pos + 12 + size > len(ms):
            break
        if size >= 11 and ms[pos + 16] == 2:
            (delta,) = struct.unpack_from(">i", ms, pos + 23)
            off, k = off + delta, delta + 1
        else:
            k = 1
        last, pos, n = off, pos + 12 + size, n + k
    return (current if last is None else last + 1), n, pos


def main():
    host, port = sys.argv[1].rsplit(":", 1)
    topic, parts, version = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    max_bytes = int(sys.argv[5]) if len(sys.argv) > 5 else 1024 * 1024
    s = socket.create_connection((host, int(port)))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    offsets = {p: 0 for p in range(parts)}
    ends = {}
    records = nbytes = 0
    corr = 0
    start = time.monotonic()
    while offsets:
        corr += 1
        resp = parse(version, call(s, 1, version, corr, fetch_body(version, topic, offsets, max_bytes)))
        for p, (err, hw, ms) in resp.items():
            if err:
                print(f"partition {p}: error {err}", file=sys.stderr)
                sys.exit(1)
            ends.setdefault(p, hw)
            off, n, used = next_offset(ms, offsets[p])
            records += n
            nbytes += used
            offsets[p] = off
            if off >= ends[p]:
                del offsets[p]
    secs = time.monotonic() - start
    print(f"records {records} bytes {nbytes} seconds {secs:.3f} MB/s {nbytes / secs / 1e6:.1f}")


if __name__ == "__main__":
    main()
