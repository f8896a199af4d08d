#!/usr/bin/env python3
"""Writes the committed seeds of the `sasl_exchange` and `requests` fuzz
targets for SASL and ACL requests: whole, successful exchanges as a client
sends them (size-prefixed frames), so the fuzzer starts from inputs that
reach every state. SCRAM proofs use the target's fixed server nonce and
alice's credential (password "secret", salt "fuzz-salt", 4096 iterations;
RFC 5802 §3). Run from the repository root:
    python3 tests/fuzz/make_sasl_seeds.py
"""
import base64
import hashlib
import hmac
import os
import struct

SERVER_NONCE = "fuzzservernonce"
SALT = b"fuzz-salt"
ITERATIONS = 4096


def string(s):  # STRING (non-flexible)
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def uvarint(n):
    out = b""
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte])


def compact_bytes(b):
    return uvarint(len(b) + 1) + b


def compact_string(s):
    return compact_bytes(s.encode())


COMPACT_NULL = uvarint(0)
NO_TAGS = uvarint(0)


def header(api_key, version, corr, flexible):
    h = struct.pack(">hhi", api_key, version, corr) + string("fuzz")
    return h + (NO_TAGS if flexible else b"")


def frame(b):
    return struct.pack(">i", len(b)) + b


def api_versions(corr):  # ApiVersions v3 (flexible)
    return frame(header(18, 3, corr, True) + compact_string("fuzz") + compact_string("1") + NO_TAGS)


def handshake(corr, mechanism, version=1):
    return frame(header(17, version, corr, False) + string(mechanism))


def authenticate(corr, token, version=2):
    if version >= 2:
        return frame(header(36, version, corr, True) + compact_bytes(token) + NO_TAGS)
    return frame(header(36, version, corr, False) + struct.pack(">i", len(token)) + token)


def scram(mechanism, hash_name):
    client_nonce = "fuzzclientnonce"
    first_bare = "n=alice,r=" + client_nonce
    first = "n,," + first_bare
    nonce = client_nonce + SERVER_NONCE
    server_first = "r=%s,s=%s,i=%d" % (nonce, base64.b64encode(SALT).decode(), ITERATIONS)
    without_proof = "c=biws,r=" + nonce
    salted = hashlib.pbkdf2_hmac(hash_name, b"secret", SALT, ITERATIONS)
    client_key = hmac.new(salted, b"Client Key", hash_name).digest()
    stored_key = hashlib.new(hash_name, client_key).digest()
    auth_message = ",".join([first_bare, server_first, without_proof]).encode()
    signature = hmac.new(stored_key, auth_message, hash_name).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature))
    final = without_proof + ",p=" + base64.b64encode(proof).decode()
    return first.encode(), final.encode()


def acl_fields(rtype, name, pattern, principal, host, op, perm, nullable_null=False):
    def s(v):
        return COMPACT_NULL if v is None else compact_string(v)
    return (bytes([rtype]) + s(name) + bytes([pattern]) + s(principal) + s(host)
            + bytes([op, perm]))


def main():
    root = os.path.dirname(os.path.abspath(__file__))
    sasl = os.path.join(root, "seeds", "sasl_exchange")
    req = os.path.join(root, "seeds", "requests")
    os.makedirs(sasl, exist_ok=True)
    seeds = {}
    seeds[(sasl, "plain-v1-authenticate-v2")] = (
        api_versions(1) + handshake(2, "PLAIN") + authenticate(3, b"\0alice\0secret"))
    seeds[(sasl, "plain-v0-raw-token")] = (
        handshake(1, "PLAIN", version=0) + frame(b"\0alice\0secret"))
    seeds[(sasl, "plain-wrong-password")] = handshake(1, "PLAIN") + authenticate(2, b"\0alice\0nope", 1)
    seeds[(sasl, "unknown-mechanism")] = handshake(1, "GSSAPI")
    for mech, h in [("SCRAM-SHA-256", "sha256"), ("SCRAM-SHA-512", "sha512")]:
        first, final = scram(mech, h)
        seeds[(sasl, mech.lower() + "-authenticate-v2")] = (
            api_versions(1) + handshake(2, mech) + authenticate(3, first) + authenticate(4, final))
        seeds[(sasl, mech.lower() + "-raw-tokens")] = (
            handshake(1, mech, version=0) + frame(first) + frame(final))
    # The routed requests (after authentication) for the `requests` target.
    seeds[(req, "sasl-handshake-v1")] = handshake(1, "SCRAM-SHA-512")
    seeds[(req, "sasl-authenticate-v2")] = authenticate(2, b"n,,n=alice,r=abc")
    seeds[(req, "describe-acls-v3-any")] = frame(
        header(29, 3, 1, True) + acl_fields(1, None, 1, None, None, 1, 1) + NO_TAGS)
    creation = acl_fields(2, "orders", 3, "User:alice", "*", 3, 3) + NO_TAGS
    prefixed = acl_fields(3, "app-", 4, "User:bob", "*", 2, 2) + NO_TAGS
    seeds[(req, "create-acls-v3")] = frame(
        header(30, 3, 1, True) + uvarint(3) + creation + prefixed + NO_TAGS)
    seeds[(req, "delete-acls-v3")] = frame(
        header(31, 3, 1, True) + uvarint(2)
        + acl_fields(2, None, 1, "User:alice", None, 1, 1) + NO_TAGS + NO_TAGS)
    for (folder, name), data in sorted(seeds.items()):
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
        print("%s/%s: %d bytes" % (os.path.basename(folder), name, len(data)))


if __name__ == "__main__":
    main()
