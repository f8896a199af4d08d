#!/usr/bin/env python3
"""SCRAM logins against one broker's SASL listener, on raw Kafka frames
(SaslHandshake v1, SaslAuthenticate v2; RFC 5802 / Kafka's
ScramSaslClient), standard library only, so the client costs the same
against shardlog and Kafka (perf/sasl_logins.sh runs both).

  rate  HOST:PORT USER PASSWORD [--threads N] [--seconds S] [--mechanism M] [--ca PEM]
      Logs in (connect, optional TLS, handshake, two SCRAM rounds, close)
      from N threads for S seconds; prints JSON {"logins", "per_sec",
      "p50_ms", "p99_ms", "failed"}.
  storm HOST:PORT USER PASSWORD [--threads N] [--failures K] [--seconds S] [--mechanism M] [--ca PEM]
      A probe: one authenticated connection sends ApiVersions v0 in a loop
      for S seconds (baseline), then again while N threads make K failed
      logins (a wrong password); prints JSON with the probe's p50/p99/max
      in both phases and how long the K failures took.
"""
import base64
import hashlib
import hmac
import json
import os
import socket
import ssl
import struct
import sys
import threading
import time

HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


def uvarint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def read_uvarint(buf, i):
    shift = n = 0
    while True:
        b = buf[i]
        i += 1
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            return n, i
        shift += 7


def header(api_key, version, corr, flexible):
    h = struct.pack(">hhih", api_key, version, corr, 4) + b"perf"
    return h + (b"\x00" if flexible else b"")


def send(sock, payload):
    sock.sendall(struct.pack(">i", len(payload)) + payload)


def recv(sock):
    def exact(n):
        buf = b""
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed by the broker")
            buf += chunk
        return buf
    (size,) = struct.unpack(">i", exact(4))
    return exact(size)


class Scram:
    """The client side; the salted password is computed once per salt."""

    salted = {}
    lock = threading.Lock()

    def __init__(self, mechanism, user, password):
        self.h = HASHES[mechanism]
        self.user, self.password = user, password

    def login(self, sock, corr):
        h = self.h
        nonce = base64.b64encode(os.urandom(18)).decode()
        first_bare = "n=%s,r=%s" % (self.user, nonce)
        answer = self.authenticate(sock, corr, ("n,," + first_bare).encode())
        if answer is None:
            return False
        server_first = answer.decode()
        attrs = dict(kv.split("=", 1) for kv in server_first.split(","))
        salt, iterations = base64.b64decode(attrs["s"]), int(attrs["i"])
        key = (self.h, self.password, attrs["s"], iterations)
        with Scram.lock:
            salted = Scram.salted.get(key)
        if salted is None:
            salted = hashlib.pbkdf2_hmac(h, self.password.encode(), salt, iterations)
            with Scram.lock:
                Scram.salted[key] = salted
        without_proof = "c=biws,r=" + attrs["r"]
        client_key = hmac.new(salted, b"Client Key", h).digest()
        stored_key = hashlib.new(h, client_key).digest()
        auth_message = ",".join([first_bare, server_first, without_proof]).encode()
        signature = hmac.new(stored_key, auth_message, h).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        final = without_proof + ",p=" + base64.b64encode(proof).decode()
        return self.authenticate(sock, corr + 1, final.encode()) is not None

    @staticmethod
    def authenticate(sock, corr, token):
        send(sock, header(36, 2, corr, True) + uvarint(len(token) + 1) + token + b"\x00")
        r = recv(sock)
        i = 4
        _tags, i = read_uvarint(r, i)
        (err,) = struct.unpack_from(">h", r, i)
        i += 2
        if err != 0:
            return None
        n, i = read_uvarint(r, i)  # error message (compact nullable)
        i += max(n - 1, 0)
        n, i = read_uvarint(r, i)  # auth bytes
        return r[i:i + n - 1]


def connect(addr, ca):
    host, port = addr.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if ca:
        ctx = ssl.create_default_context(cafile=ca)
        ctx.check_hostname = False
        sock = ctx.wrap_socket(sock)
    return sock


def login(addr, ca, scram, mechanism):
    """One whole login; (ok, seconds)."""
    t = time.perf_counter()
    sock = connect(addr, ca)
    try:
        m = mechanism.encode()
        send(sock, header(17, 1, 1, False) + struct.pack(">h", len(m)) + m)
        r = recv(sock)
        (err,) = struct.unpack_from(">h", r, 4)
        ok = err == 0 and scram.login(sock, 2)
    except (ConnectionError, OSError):
        ok = False
    finally:
        sock.close()
    return ok, time.perf_counter() - t


def percentile(xs, q):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] * 1000


def rate(addr, user, pw, opts):
    mech, ca = opts["mechanism"], opts.get("ca")
    scram = Scram(mech, user, pw)
    stop = time.monotonic() + float(opts["seconds"])
    times, failed, lock = [], [0], threading.Lock()

    def worker():
        while time.monotonic() < stop:
            ok, s = login(addr, ca, scram, mech)
            with lock:
                if ok:
                    times.append(s)
                else:
                    failed[0] += 1

    login(addr, ca, scram, mech)  # the salted password, once
    t = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(int(opts["threads"]))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wall = time.monotonic() - t
    return {"logins": len(times), "per_sec": round(len(times) / wall, 1),
            "p50_ms": percentile(times, 0.5), "p99_ms": percentile(times, 0.99),
            "failed": failed[0]}


def storm(addr, user, pw, opts):
    mech, ca = opts["mechanism"], opts.get("ca")
    scram = Scram(mech, user, pw)
    probe = connect(addr, ca)
    m = mech.encode()
    send(probe, header(17, 1, 1, False) + struct.pack(">h", len(m)) + m)
    recv(probe)
    if not scram.login(probe, 2):
        raise SystemExit("storm: the probe could not log in")
    seconds = float(opts["seconds"])

    def probe_for(until, out):
        corr = 100
        while time.monotonic() < until():
            corr += 1
            t = time.perf_counter()
            send(probe, header(18, 0, corr, False))
            recv(probe)
            out.append(time.perf_counter() - t)

    base = []
    end = time.monotonic() + seconds
    probe_for(lambda: end, base)
    wrong = Scram(mech, user, pw + "-wrong")
    todo, lock, done = [int(opts["failures"])], threading.Lock(), threading.Event()

    def attacker():
        while True:
            with lock:
                if todo[0] <= 0:
                    return
                todo[0] -= 1
            login(addr, ca, wrong, mech)

    during = []
    t = time.monotonic()
    threads = [threading.Thread(target=attacker) for _ in range(int(opts["threads"]))]
    for th in threads:
        th.start()
    watcher = threading.Thread(target=lambda: ([th.join() for th in threads], done.set()))
    watcher.start()
    probe_for(lambda: float("inf") if not done.is_set() else 0, during)
    storm_s = time.monotonic() - t
    probe.close()
    return {"failures": int(opts["failures"]), "storm_s": round(storm_s, 2),
            "baseline": {"n": len(base), "p50_ms": percentile(base, 0.5),
                         "p99_ms": percentile(base, 0.99), "max_ms": max(base) * 1000},
            "during": {"n": len(during), "p50_ms": percentile(during, 0.5),
                       "p99_ms": percentile(during, 0.99),
                       "max_ms": max(during) * 1000 if during else None}}


def main():
    mode, addr, user, pw = sys.argv[1:5]
    opts = {"threads": "4", "seconds": "10", "failures": "10000", "mechanism": "SCRAM-SHA-512"}
    rest = sys.argv[5:]
    while rest:
        key, value = rest[0].lstrip("-"), rest[1]
        opts[key] = value
        rest = rest[2:]
    out = rate(addr, user, pw, opts) if mode == "rate" else storm(addr, user, pw, opts)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
