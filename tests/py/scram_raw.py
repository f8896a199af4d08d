"""Raw Kafka requests over SASL_SSL with SCRAM-SHA-512 (tests/acl_changes):
one connection to each given broker, logged in, then the same frames.

  scram_raw.py <cafile> <user> <password> <addresses> <frame-hex>...
      addresses: host:port[,host:port...]. For each address: TLS (the CA
      in cafile, no host name check), SaslHandshake v1 "SCRAM-SHA-512",
      SaslAuthenticate v0 with RFC 5802's exchange (Kafka's
      ScramSaslClient: gs2 header "n,,", channel binding "biws"), then
      each frame (size prefix, header and body, as the test encoded it),
      reading one response frame after each. Prints {"responses":
      {address: [body-hex | null, ...]}, "errors": {address: text}}: the
      response frames' bytes after their size prefix, null where the
      broker closed the connection; a failed login is in "errors".
Exit status 0 unless the arguments are bad.
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


def read_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def read_frame(sock):
    head = read_exact(sock, 4)
    if head is None:
        return None
    return read_exact(sock, struct.unpack(">i", head)[0])


def request(sock, key, version, correlation, body):
    """A non-flexible request (header v1) and its answer after the
    correlation id (response header v0)."""
    client = b"scram-raw"
    header = struct.pack(">hhih", key, version, correlation, len(client)) + client
    frame = header + body
    sock.sendall(struct.pack(">i", len(frame)) + frame)
    answer = read_frame(sock)
    if answer is None:
        raise RuntimeError("closed after request key %d" % key)
    return answer[4:]


def authenticate(sock, correlation, token):
    """SaslAuthenticate v0: (error code, message, auth bytes)."""
    body = request(sock, 36, 0, correlation, struct.pack(">i", len(token)) + token)
    code, mlen = struct.unpack(">hh", body[:4])
    at = 4
    message = None
    if mlen >= 0:
        message = body[at:at + mlen].decode()
        at += mlen
    (blen,) = struct.unpack(">i", body[at:at + 4])
    return code, message, body[at + 4:at + 4 + blen]


def login(sock, user, password):
    mech = b"SCRAM-SHA-512"
    body = request(sock, 17, 1, 1, struct.pack(">h", len(mech)) + mech)
    (code,) = struct.unpack(">h", body[:2])
    if code != 0:
        raise RuntimeError("SaslHandshake error %d" % code)
    nonce = base64.b64encode(os.urandom(24)).decode().replace("=", "")
    first_bare = "n=%s,r=%s" % (user.replace("=", "=3D").replace(",", "=2C"), nonce)
    code, message, server_first = authenticate(sock, 2, ("n,," + first_bare).encode())
    if code != 0:
        raise RuntimeError("client-first: error %d %s" % (code, message))
    server_first = server_first.decode()
    fields = dict(part.split("=", 1) for part in server_first.split(","))
    salt, iterations = base64.b64decode(fields["s"]), int(fields["i"])
    salted = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", hashlib.sha512).digest()
    stored_key = hashlib.sha512(client_key).digest()
    without_proof = "c=biws,r=%s" % fields["r"]
    auth_message = ("%s,%s,%s" % (first_bare, server_first, without_proof)).encode()
    signature = hmac.new(stored_key, auth_message, hashlib.sha512).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature))
    final = "%s,p=%s" % (without_proof, base64.b64encode(proof).decode())
    code, message, _ = authenticate(sock, 3, final.encode())
    if code != 0:
        raise RuntimeError("client-final: error %d %s" % (code, message))


def run(address, cafile, user, password, frames):
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.check_hostname = False
    host, port = address.rsplit(":", 1)
    out = []
    with socket.create_connection((host, int(port)), timeout=20) as raw:
        with ctx.wrap_socket(raw) as sock:
            login(sock, user, password)
            for frame in frames:
                sock.sendall(bytes.fromhex(frame))
                body = read_frame(sock)
                out.append(None if body is None else body.hex())
                if body is None:
                    break
    return out


def main():
    cafile, user, password, addresses = sys.argv[1:5]
    frames = sys.argv[5:]
    responses, errors = {}, {}
    for address in addresses.split(","):
        try:
            responses[address] = run(address, cafile, user, password, frames)
        except Exception as e:  # noqa: BLE001 - reported to the test
            errors[address] = "%s: %s" % (type(e).__name__, e)
    print(json.dumps({"responses": responses, "errors": errors}))


if __name__ == "__main__":
    main()
