"""Python clients over SSL (tests/tls_clients.rs): confluent-kafka
(librdkafka) and kafka-python, each with a CA file and optionally a client
certificate.

  roundtrip <client> <bootstrap> <topic> <partitions> <count> <tls.json>
      Creates the topic with the client's admin API, produces COUNT records
      (value "tls-<client>-<i>", record i to partition i % partitions),
      reads every partition back from offset 0 and prints
      {"created", "delivered", "errors", "values": {partition: [value, ...]},
       "brokers": [[id, host, port], ...]}  (brokers from Metadata).
  refused <client> <bootstrap> <tls.json>
      Asks for Metadata with short timeouts and prints {"ok": bool,
      "errors": [...]}: ok is false when no broker could be reached (what a
      failed TLS handshake looks like to the client).

tls.json: {"cafile": PATH, "certfile": PATH|null, "keyfile": PATH|null}.
Exit status 0 unless the arguments are bad; the caller asserts on the JSON.
"""

import json
import sys
import time


def confluent_conf(bootstrap, tls):
    conf = {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SSL",
        "ssl.ca.location": tls["cafile"],
        "ssl.endpoint.identification.algorithm": "https",
    }
    if tls.get("certfile"):
        conf["ssl.certificate.location"] = tls["certfile"]
        conf["ssl.key.location"] = tls["keyfile"]
    return conf


def kp_conf(bootstrap, tls):
    conf = {
        "bootstrap_servers": bootstrap,
        "security_protocol": "SSL",
        "ssl_cafile": tls["cafile"],
        "ssl_check_hostname": True,
    }
    if tls.get("certfile"):
        conf["ssl_certfile"] = tls["certfile"]
        conf["ssl_keyfile"] = tls["keyfile"]
    return conf


def value(client, i):
    return "tls-%s-%d" % (client, i)


def roundtrip_confluent(bootstrap, topic, partitions, count, tls):
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    errors = []
    conf = confluent_conf(bootstrap, tls)
    admin = AdminClient(dict(conf))
    fut = admin.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=30)
    fut[topic].result(timeout=60)
    md = admin.list_topics(timeout=30)
    brokers = sorted([b.id, b.host, b.port] for b in md.brokers.values())
    deadline = time.time() + 60
    while time.time() < deadline:
        t = admin.list_topics(topic, timeout=30).topics.get(topic)
        if t is not None and t.error is None and len(t.partitions) == partitions \
                and all(p.leader >= 0 for p in t.partitions.values()):
            break
        time.sleep(0.1)
    delivered = [0]

    def on_delivery(err, msg):
        if err is not None:
            errors.append(str(err))
        else:
            delivered[0] += 1

    p = Producer(dict(conf, **{"acks": "all", "message.timeout.ms": 60000}))
    for i in range(count):
        p.produce(topic, value(client="confluent", i=i).encode(), partition=i % partitions,
                  on_delivery=on_delivery)
        p.poll(0)
    p.flush(90)
    values = read_confluent(Consumer, TopicPartition, conf, topic, partitions, count, errors)
    return {"created": True, "delivered": delivered[0], "errors": errors, "values": values,
            "brokers": brokers}


def read_confluent(Consumer, TopicPartition, conf, topic, partitions, count, errors):
    c = Consumer(dict(conf, **{"group.id": "tls-check", "enable.auto.commit": False,
                               "auto.offset.reset": "earliest"}))
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    values = {str(p): [] for p in range(partitions)}
    got = 0
    deadline = time.time() + 60
    while got < count and time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            errors.append(str(m.error()))
            continue
        values[str(m.partition())].append(m.value().decode())
        got += 1
    c.close()
    return values


def roundtrip_kafka_python(bootstrap, topic, partitions, count, tls):
    import kafka
    from kafka.admin import KafkaAdminClient, NewTopic

    errors = []
    conf = kp_conf(bootstrap, tls)
    admin = KafkaAdminClient(**conf)
    admin.create_topics([NewTopic(topic, partitions, 1)], timeout_ms=30000)
    meta = admin.describe_cluster()
    brokers = sorted([b["broker_id"], b["host"], b["port"]] for b in meta["brokers"])
    admin.close()
    p = kafka.KafkaProducer(acks="all", **conf)
    futures = [p.send(topic, value("kafka-python", i).encode(), partition=i % partitions)
               for i in range(count)]
    p.flush(60)
    delivered = 0
    for f in futures:
        try:
            f.get(timeout=60)
            delivered += 1
        except Exception as e:  # noqa: BLE001 - reported, the caller asserts
            errors.append(repr(e))
    p.close()
    c = kafka.KafkaConsumer(enable_auto_commit=False, auto_offset_reset="earliest", **conf)
    tps = [kafka.TopicPartition(topic, q) for q in range(partitions)]
    c.assign(tps)
    c.seek_to_beginning(*tps)
    values = {str(q): [] for q in range(partitions)}
    got = 0
    deadline = time.time() + 60
    while got < count and time.time() < deadline:
        for tp, msgs in c.poll(timeout_ms=500).items():
            for m in msgs:
                values[str(tp.partition)].append(m.value.decode())
                got += 1
    c.close()
    return {"created": True, "delivered": delivered, "errors": errors, "values": values,
            "brokers": brokers}


def refused_confluent(bootstrap, tls):
    from confluent_kafka.admin import AdminClient

    errors = []
    conf = confluent_conf(bootstrap, tls)
    conf["error_cb"] = lambda e: errors.append(str(e))
    conf["reconnect.backoff.max.ms"] = 500
    admin = AdminClient(conf)
    try:
        md = admin.list_topics(timeout=10)
        return {"ok": True, "brokers": len(md.brokers), "errors": errors}
    except Exception as e:  # noqa: BLE001 - the refusal is the expected outcome
        errors.append(repr(e))
        return {"ok": False, "errors": errors}


def refused_kafka_python(bootstrap, tls):
    import kafka

    try:
        c = kafka.KafkaConsumer(request_timeout_ms=10000, api_version_auto_timeout_ms=10000,
                                **kp_conf(bootstrap, tls))
        topics = c.topics()
        c.close()
        return {"ok": True, "topics": sorted(topics), "errors": []}
    except Exception as e:  # noqa: BLE001 - the refusal is the expected outcome
        return {"ok": False, "errors": [repr(e)]}


def main():
    cmd = sys.argv[1]
    client = sys.argv[2]
    if cmd == "roundtrip":
        bootstrap, topic = sys.argv[3], sys.argv[4]
        partitions, count = int(sys.argv[5]), int(sys.argv[6])
        tls = json.load(open(sys.argv[7]))
        f = roundtrip_confluent if client == "confluent" else roundtrip_kafka_python
        out = f(bootstrap, topic, partitions, count, tls)
    elif cmd == "refused":
        tls = json.load(open(sys.argv[4]))
        f = refused_confluent if client == "confluent" else refused_kafka_python
        out = f(sys.argv[3], tls)
    else:
        raise SystemExit("unknown command " + cmd)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
