#!/usr/bin/env python3
"""Client side of perf/tls_handshake_burst.sh.

  tls_handshake_burst.py probe HOST:PORT SECONDS
      One PLAINTEXT connection sending ApiVersions v0 back to back for
      SECONDS; prints a JSON line of its round trips (count, p50/p99/p99.9/
      max in microseconds).
  tls_handshake_burst.py burst HOST:PORT CA N WORKERS
      N new TLS connections, WORKERS at a time: each connects, completes the
      handshake, sends one ApiVersions v0 and reads its answer, closes.
      Prints a JSON line: completed, failed, seconds, handshakes per second.
"""
import json
import socket
import ssl
import struct
import sys
import threading
import time


def api_versions(corr):
    # RequestHeader v1: api_key 18, api_version 0, correlation id, client id.
    body = struct.pack(">hhih", 18, 0, corr, 5) + b"burst"
    return struct.pack(">i", len(body)) + body


def read_exact(sock, n):
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return out


def round_trip(sock, corr):
    sock.sendall(api_versions(corr))
    (size,) = struct.unpack(">i", read_exact(sock, 4))
    got = read_exact(sock, size)
    if struct.unpack(">i", got[:4])[0] != corr:
        raise ValueError("correlation id mismatch")


def host_port(arg):
    host, port = arg.rsplit(":", 1)
    return host, int(port)


def probe(addr, seconds):
    sock = socket.create_connection(host_port(addr))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    rtts = []
    end = time.monotonic() + seconds
    corr = 0
    while time.monotonic() < end:
        t0 = time.perf_counter_ns()
        round_trip(sock, corr)
        rtts.append((time.perf_counter_ns() - t0) // 1000)
        corr += 1
    rtts.sort()

    def pct(p):
        return rtts[min(len(rtts) - 1, int(len(rtts) * p))]

    print(json.dumps({"count": len(rtts), "p50_us": pct(0.5), "p99_us": pct(0.99),
                      "p999_us": pct(0.999), "max_us": rtts[-1]}))


def burst(addr, ca, n, workers):
    ctx = ssl.create_default_context(cafile=ca)
    target = host_port(addr)
    lock = threading.Lock()
    state = {"next": 0, "ok": 0, "failed": 0}

    def worker():
        while True:
            with lock:
                if state["next"] >= n:
                    return
                state["next"] += 1
            try:
                raw = socket.create_connection(target, timeout=30)
                with ctx.wrap_socket(raw, server_hostname=target[0]) as s:
                    round_trip(s, 1)
                with lock:
                    state["ok"] += 1
            except (OSError, ValueError, ConnectionError):
                with lock:
                    state["failed"] += 1

    t0 = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    secs = time.monotonic() - t0
    print(json.dumps({"completed": state["ok"], "failed": state["failed"],
                      "seconds": round(secs, 3), "per_second": round(state["ok"] / secs, 1)}))


if __name__ == "__main__":
    if sys.argv[1] == "probe":
        probe(sys.argv[2], float(sys.argv[3]))
    elif sys.argv[1] == "burst":
        burst(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        sys.exit(__doc__)
