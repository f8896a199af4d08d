"""confluent-kafka (librdkafka) over mTLS against a broker with Kafka's
AclAuthorizer (tests/security_acls.rs). The principal is the client
certificate's DN.

  produce <bootstrap> <tls.json> <topic> <count>
      Produces COUNT records to partition 0 and prints
      {"delivered": n, "errors": [error names]}.
  consume <bootstrap> <tls.json> <topic> <group> <count>
      Subscribes with group GROUP, reads until COUNT records arrived or an
      error is reported (at most 20 s), commits what it read and prints
      {"consumed": n, "errors": [error names], "commit": error name|null}.
  metadata <bootstrap> <tls.json> <topic|->
      Prints {"topics": {name: error name|null}} for every topic the
      broker shows (all topics with "-", else the named one).
  create <bootstrap> <tls.json> <topic>
      Creates the topic (1 partition) and prints {"error": name|null}.
  watermarks <bootstrap> <tls.json> <topic>
      Prints {"high": n} of partition 0 (the admin reads back what was
      appended).

  raw <bootstrap> <tls.json> <hex frame>...
      Sends each size-prefixed request frame on one mTLS connection and
      prints {"responses": [hex of each response frame, without its size
      prefix, or null when the broker closed]}.

tls.json: {"cafile": PATH, "certfile": PATH, "keyfile": PATH}.
"""

import json
import sys
import time


def conf(bootstrap, tls_file):
    with open(tls_file) as f:
        tls = json.load(f)
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SSL",
        "ssl.ca.location": tls["cafile"],
        "ssl.certificate.location": tls["certfile"],
        "ssl.key.location": tls["keyfile"],
    }


def name(err):
    return err.name() if err is not None else None


def produce(bootstrap, tls, topic, count):
    from confluent_kafka import Producer

    errors = []
    delivered = [0]

    def report(err, _msg):
        if err is not None:
            errors.append(name(err))
        else:
            delivered[0] += 1

    p = Producer(dict(conf(bootstrap, tls), **{"message.timeout.ms": 15000,
                                                "error_cb": lambda e: errors.append(name(e))}))
    for i in range(count):
        p.produce(topic, value=b"acl-%d" % i, partition=0, on_delivery=report)
    p.flush(30)
    return {"delivered": delivered[0], "errors": sorted(set(errors))}


def consume(bootstrap, tls, topic, group, count):
    from confluent_kafka import Consumer

    errors = []
    c = Consumer(dict(conf(bootstrap, tls), **{
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "error_cb": lambda e: errors.append(name(e)),
    }))
    c.subscribe([topic])
    consumed = 0
    deadline = time.time() + 20
    while consumed < count and not errors and time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            errors.append(name(m.error()))
            continue
        consumed += 1
    commit = None
    if consumed:
        try:
            c.commit(asynchronous=False)
        except Exception as e:  # KafkaException carries the KafkaError
            commit = name(e.args[0]) if e.args else str(e)
    c.close()
    return {"consumed": consumed, "errors": sorted(set(errors)), "commit": commit}


def metadata(bootstrap, tls, topic):
    from confluent_kafka.admin import AdminClient

    a = AdminClient(conf(bootstrap, tls))
    md = a.list_topics(topic=None if topic == "-" else topic, timeout=15)
    return {"topics": {t: name(m.error) for t, m in md.topics.items()}}


def create(bootstrap, tls, topic):
    from confluent_kafka.admin import AdminClient, NewTopic

    a = AdminClient(conf(bootstrap, tls))
    f = a.create_topics([NewTopic(topic, 1, 1)])[topic]
    try:
        f.result(30)
        return {"error": None}
    except Exception as e:
        return {"error": name(e.args[0]) if e.args else str(e)}


def watermarks(bootstrap, tls, topic):
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(dict(conf(bootstrap, tls), **{"group.id": "acl-watermarks"}))
    _low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=15)
    c.close()
    return {"high": high}


def raw(bootstrap, tls_file, frames):
    import socket
    import ssl
    import struct

    with open(tls_file) as f:
        tls = json.load(f)
    ctx = ssl.create_default_context(cafile=tls["cafile"])
    ctx.check_hostname = False
    ctx.load_cert_chain(tls["certfile"], tls["keyfile"])
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    out = []
    with socket.create_connection((host, int(port)), timeout=20) as sock:
        with ctx.wrap_socket(sock) as s:
            for frame in frames:
                s.sendall(bytes.fromhex(frame))

                def read(n):
                    buf = b""
                    while len(buf) < n:
                        chunk = s.recv(n - len(buf))
                        if not chunk:
                            return None
                        buf += chunk
                    return buf
                head = read(4)
                body = None if head is None else read(struct.unpack(">i", head)[0])
                out.append(None if body is None else body.hex())
                if body is None:
                    break
    return {"responses": out}


def main():
    mode, bootstrap, tls = sys.argv[1], sys.argv[2], sys.argv[3]
    rest = sys.argv[4:]
    if mode == "produce":
        out = produce(bootstrap, tls, rest[0], int(rest[1]))
    elif mode == "consume":
        out = consume(bootstrap, tls, rest[0], rest[1], int(rest[2]))
    elif mode == "metadata":
        out = metadata(bootstrap, tls, rest[0])
    elif mode == "create":
        out = create(bootstrap, tls, rest[0])
    elif mode == "watermarks":
        out = watermarks(bootstrap, tls, rest[0])
    elif mode == "raw":
        out = raw(bootstrap, tls, rest)
    else:
        raise SystemExit("unknown mode " + mode)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
