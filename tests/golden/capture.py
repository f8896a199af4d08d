#!/usr/bin/env python3
"""Capture the request frames real clients send (for tests/golden/).

Usage: capture.py LISTEN_PORT BROKER_HOST:PORT OUT_DIR PREFIX
Proxies every connection to the broker and writes each client->broker frame
as hex to OUT_DIR/PREFIX-<conn>-<n>-key<api_key>-v<api_version>.hex.
Run the broker with advertised.listeners pointing at LISTEN_PORT so clients
come back through the proxy. Stops after 20 s of no new connections.
"""
import os, socket, struct, sys, threading

listen_port, upstream, out_dir, prefix = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
uh, up = upstream.rsplit(":", 1)
os.makedirs(out_dir, exist_ok=True)
conn_no = [0]

def pump_requests(src, dst, n):
    buf, count = b"", 0
    while True:
        data = src.recv(65536)
        if not data:
            dst.shutdown(socket.SHUT_WR)
            return
        dst.sendall(data)
        buf += data
        while len(buf) >= 4:
            size = struct.unpack(">i", buf[:4])[0]
            if len(buf) < 4 + size:
                break
            frame, buf = buf[4:4 + size], buf[4 + size:]
            key, ver = struct.unpack(">hh", frame[:4])
            name = f"{prefix}-c{n}-{count:02d}-key{key}-v{ver}.hex"
            with open(os.path.join(out_dir, name), "w") as f:
                f.write(frame.hex() + "\n")
            count += 1

def pump(src, dst):
    while True:
        data = src.recv(65536)
        if not data:
            return
        dst.sendall(data)

srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", listen_port))
srv.listen(16)
srv.settimeout(20)
while True:
    try:
        c, _ = srv.accept()
    except socket.timeout:
        break
    u = socket.create_connection((uh, int(up)))
    conn_no[0] += 1
    threading.Thread(target=pump_requests, args=(c, u, conn_no[0]), daemon=True).start()
    threading.Thread(target=pump, args=(u, c), daemon=True).start()
