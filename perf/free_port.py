#!/usr/bin/env python3
"""Print N free loopback ports (default 1) for a broker, ZooKeeper or Kafka
JVM that a perf/ script starts on a port it must know beforehand.

The ports lie outside the kernel's ephemeral range
(net.ipv4.ip_local_port_range): a port from bind(("127.0.0.1", 0)), once
released, may be handed to any outgoing connection as its source port
before the broker binds it, and the broker then fails with "Address already
in use". Ports reserved by running tests (tests/common/ports.rs holds an
flock on <tmp>/shardlog-test-ports/<port>.lock) are skipped, and so are
ports this script handed out in the last 120 s (the lock file's mtime),
since a shell script cannot hold the lock until its broker binds.
"""
import fcntl
import os
import random
import socket
import sys
import tempfile
import time

RECENT_S = 120


def ephemeral_range():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(w) for w in f.read().split()[:2])
            return low, high
    except (OSError, ValueError):
        return 32768, 60999


def candidate_range(low, high):
    below = (10000, low - 1)
    above = (high + 1, 65535)
    size = lambda r: max(0, r[1] - r[0] + 1)
    return below if size(below) >= size(above) else above


def take(port, lock_dir):
    path = os.path.join(lock_dir, f"{port}.lock")
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # a running test holds it
        if time.time() - os.fstat(fd).st_mtime < RECENT_S and os.fstat(fd).st_size > 0:
            return False  # handed out by this script a moment ago
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        finally:
            s.close()
        os.ftruncate(fd, 0)
        os.write(fd, b"perf\n")  # marks it handed out (mtime, size)
        return True
    finally:
        os.close(fd)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    lock_dir = os.path.join(tempfile.gettempdir(), "shardlog-test-ports")
    os.makedirs(lock_dir, exist_ok=True)
    first, last = candidate_range(*ephemeral_range())
    ports = list(range(first, last + 1))
    random.shuffle(ports)
    out = []
    for p in ports:
        if take(p, lock_dir):
            out.append(p)
            if len(out) == n:
                print("\n".join(str(x) for x in out))
                return
    sys.exit(f"free_port.py: no free port in {first}-{last}")


if __name__ == "__main__":
    main()
