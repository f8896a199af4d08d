#!/usr/bin/env python3
"""A consume ceiling: the least a Kafka broker can do for a Fetch.

`fetch_echo.py PORT TOPIC PARTITIONS RECORDS SIZE` serves one topic of
PARTITIONS partitions, each holding RECORDS records of SIZE-byte values,
to any Kafka consumer (rdkafka_performance -C, shardlog loadgen
--consume-only): ApiVersions, Metadata v1, ListOffsets v1 and Fetch v4,
nothing else. Every Fetch is answered at once with one prebuilt record
batch per partition (about 1 MB, built and CRC'd once at start; only its
base offset is written per answer, that field is outside the CRC),
scattered straight from that one buffer with sendmsg: no log, no index, no
copy in user space. What a client reads from it is the rate that client
reaches on this host with a broker that costs (almost) nothing, the bound
for any broker's consume figure with the same client and cores.

perf/results.sh runs it beside shardlog and Kafka; it prints "listening"
when ready.
"""

import socket
import struct
import sys
import threading
import time


def crc32c(data):
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    crc = 0xFFFFFFFF
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def varint(n):
    n = (n << 1) ^ (n >> 63)  # zigzag
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def record_batch(count, size):
    """A magic-v2 batch of `count` records (no key, `size`-byte values)
    with base offset 0, its CRC computed."""
    value = b"x" * size
    records = bytearray()
    for i in range(count):
        body = b"\x00" + varint(0) + varint(i) + varint(-1) + varint(size) + value + varint(0)
        records += varint(len(body)) + body
    now = int(time.time() * 1000)
    after_crc = struct.pack(">hiqqqhii", 0, count - 1, now, now, -1, -1, -1, count) + records
    crc = crc32c(after_crc)
    head = struct.pack(">ibI", 0, 2, crc)  # leader epoch, magic, crc
    batch = head + after_crc
    # base offset, then the batch length: the bytes after that field
    return struct.pack(">qi", 0, len(batch)) + batch


def string(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


class Reader:
    def __init__(self, buf):
        self.buf, self.pos = buf, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += struct.calcsize(fmt)
        return v if len(v) > 1 else v[0]

    def string(self):
        n = self.take(">h")
        if n < 0:
            return None
        s = self.buf[self.pos:self.pos + n].decode()
        self.pos += n
        return s


# (api key, min, max) advertised: only non-flexible versions. Produce v3
# is named (never served) because librdkafka enables record batches
# (MsgVer2) only with Produce v3 and Fetch v4 both.
APIS = [(0, 3, 3), (1, 4, 4), (2, 1, 1), (3, 1, 1), (18, 0, 2)]


class Echo:
    def __init__(self, port, topic, partitions, records, size):
        self.port, self.topic, self.partitions = port, topic, partitions
        per_batch = max(1, min(records, (1000 * 1000) // (size + 8)))
        self.per_batch = per_batch
        # Each partition ends at a whole number of batches.
        self.end = max(per_batch, records // per_batch * per_batch)
        self.batch = memoryview(record_batch(per_batch, size))

    def serve(self):
        srv = socket.socket()
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("127.0.0.1", self.port))
        srv.listen(64)
        print("fetch_echo: listening on 127.0.0.1:%d, %d partitions x %d records, %d per batch"
              % (self.port, self.partitions, self.end, self.per_batch), flush=True)
        while True:
            conn, _ = srv.accept()
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self.connection, args=(conn,), daemon=True).start()

    def connection(self, conn):
        try:
            while True:
                head = self.read(conn, 4)
                if head is None:
                    return
                req = self.read(conn, struct.unpack(">i", head)[0])
                if req is None:
                    return
                self.answer(conn, Reader(req))
        except (ConnectionError, OSError):
            return
        finally:
            conn.close()

    @staticmethod
    def read(conn, n):
        buf = bytearray()
        while len(buf) < n:
            chunk = conn.recv(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return bytes(buf)

    @staticmethod
    def send(conn, parts):
        total = sum(len(p) for p in parts)
        parts = [struct.pack(">i", total)] + parts
        while parts:
            sent = conn.sendmsg(parts[:1024])
            while parts and sent >= len(parts[0]):
                sent -= len(parts[0])
                parts.pop(0)
            if parts and sent:
                parts[0] = memoryview(parts[0])[sent:]

    def answer(self, conn, r):
        key, version, corr = r.take(">hhi")
        r.string()  # client id
        head = struct.pack(">i", corr)
        if key == 18:
            # ApiVersions: a flexible v3 request is answered in v0 with
            # UNSUPPORTED_VERSION and the versions, as Kafka does (KIP-511).
            err = 0 if version <= 2 else 35
            body = struct.pack(">hi", err, len(APIS)) + b"".join(struct.pack(">hhh", *a) for a in APIS)
            if version >= 1 and err == 0:
                body += struct.pack(">i", 0)
            self.send(conn, [head, body])
        elif key == 3:
            body = struct.pack(">i", 1) + struct.pack(">i", 1) + string("127.0.0.1") + struct.pack(">ih", self.port, -1)
            body += struct.pack(">i", 1)  # controller
            body += struct.pack(">i", 1) + struct.pack(">h", 0) + string(self.topic) + b"\x00"
            body += struct.pack(">i", self.partitions)
            for p in range(self.partitions):
                body += struct.pack(">hii", 0, p, 1) + struct.pack(">ii", 1, 1) + struct.pack(">ii", 1, 1)
            self.send(conn, [head, body])
        elif key == 2:
            r.take(">i")
            out = []
            for _ in range(r.take(">i")):
                name = r.string()
                parts = []
                for _ in range(r.take(">i")):
                    p, ts = r.take(">iq")
                    offset = 0 if ts == -2 else self.end
                    parts.append(struct.pack(">ihqq", p, 0, -1, offset))
                out.append(string(name) + struct.pack(">i", len(parts)) + b"".join(parts))
            self.send(conn, [head, struct.pack(">i", len(out)) + b"".join(out)])
        elif key == 1:
            _replica, max_wait, _min, _max, _iso = r.take(">iiiib")
            parts = [head, struct.pack(">i", 0)]
            topics = r.take(">i")
            parts.append(struct.pack(">i", topics))
            served = 0
            for _ in range(topics):
                name = r.string()
                n = r.take(">i")
                parts.append(string(name) + struct.pack(">i", n))
                for _ in range(n):
                    p, offset, _pmax = r.take(">iqi")
                    fixed = struct.pack(">ihqqi", p, 0, self.end, self.end, -1)
                    if 0 <= offset < self.end:
                        parts.append(fixed + struct.pack(">iq", len(self.batch), offset))
                        parts.append(self.batch[8:])
                        served += 1
                    else:
                        err = 0 if offset == self.end else 1  # OFFSET_OUT_OF_RANGE
                        parts.append(struct.pack(">ihqqi", p, err, self.end, self.end, -1) + struct.pack(">i", 0))
            if not served:
                time.sleep(min(max_wait, 500) / 1000)  # at the end: long-poll, as a broker does
            self.send(conn, parts)
        else:
            conn.close()
            raise ConnectionError("unsupported api key %d" % key)


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    port, topic, partitions, records, size = sys.argv[1:]
    Echo(int(port), topic, int(partitions), int(records), int(size)).serve()


if __name__ == "__main__":
    main()
