"""confluent-kafka (librdkafka) over SASL (tests/sasl_clients.rs).

  roundtrip <conf.json> <topic> <count>
      Creates the topic (1 partition) with the admin API, produces COUNT
      records ("sasl-<i>"), reads them back from offset 0 and prints
      {"delivered", "errors", "values": [...]}.
  refused <conf.json>
      Asks for Metadata with a short timeout and prints {"ok": bool,
      "errors": [...]} (the errors librdkafka reported, e.g. the broker's
      SASL_AUTHENTICATION_FAILED message).

  produce <conf.json> <topic> <count> <prefix>
      Produces COUNT records ("<prefix>-<i>") to partition 0 of an existing
      topic with acks=all and prints {"delivered", "errors"}.
  read <conf.json> <topic> <count>
      Reads partition 0 from offset 0 (no group) until COUNT records or
      30 s and prints {"values": [...], "errors": [...]}.

conf.json: the librdkafka settings (bootstrap.servers, security.protocol,
sasl.*, ssl.*). With "sasl.mechanism": "OAUTHBEARER", the extra key
"shardlog.oauth.token" is the token an `oauth_cb` hands librdkafka (with
the principal "shardlog.oauth.principal" and expiry "shardlog.oauth.expiry"
in epoch seconds). Exit status 0 unless the arguments are bad.
"""

import json
import sys
import time


def roundtrip(conf, topic, count):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    errors = []
    admin = AdminClient(dict(conf))
    if "oauth_cb" in conf:
        admin.poll(0.5)  # librdkafka serves oauth_cb from poll()
    admin.create_topics([NewTopic(topic, 1, 1)], operation_timeout=30)[topic].result(timeout=60)
    deadline = time.time() + 60
    while time.time() < deadline:
        t = admin.list_topics(topic, timeout=30).topics.get(topic)
        if t is not None and t.error is None and all(p.leader >= 0 for p in t.partitions.values()):
            break
        time.sleep(0.1)
    delivered = [0]

    def on_delivery(err, _msg):
        if err is not None:
            errors.append(str(err))
        else:
            delivered[0] += 1

    p = Producer(dict(conf, **{"acks": "all"}))
    if "oauth_cb" in conf:
        p.poll(0.5)
    for i in range(count):
        p.produce(topic, value=("sasl-%d" % i).encode(), partition=0, on_delivery=on_delivery)
    p.flush(60)
    got = read(conf, topic, count, seconds=60)
    return {"delivered": delivered[0], "errors": errors + got["errors"], "values": got["values"]}


def refused(conf):
    from confluent_kafka.admin import AdminClient

    errors = []
    conf = dict(conf, **{"error_cb": lambda e: errors.append(str(e))})
    admin = AdminClient(conf)
    if "oauth_cb" in conf:
        admin.poll(0.5)
    try:
        admin.list_topics(timeout=5)
        ok = True
    except Exception as e:  # noqa: BLE001 - any failure is the answer
        errors.append(str(e))
        ok = False
    # error_cb runs from poll(): collect what librdkafka reported (the
    # broker's SASL failure) before answering.
    for _ in range(10):
        admin.poll(0.3)
        if any("SASL" in e or "uthentication" in e for e in errors):
            break
    return {"ok": ok, "errors": errors}


def produce(conf, topic, count, prefix):
    from confluent_kafka import Producer

    errors = []
    delivered = [0]

    def on_delivery(err, _msg):
        if err is not None:
            errors.append(err.name())
        else:
            delivered[0] += 1

    p = Producer(dict(conf, **{"acks": "all", "message.timeout.ms": 20000,
                               "error_cb": lambda e: errors.append(e.name())}))
    for i in range(count):
        p.produce(topic, value=("%s-%d" % (prefix, i)).encode(), partition=0,
                  on_delivery=on_delivery)
    p.flush(30)
    return {"delivered": delivered[0], "errors": errors}


def read(conf, topic, count, seconds=30):
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(dict(conf, **{"group.id": "sasl-" + topic, "enable.auto.commit": False}))
    c.assign([TopicPartition(topic, 0, 0)])
    values, errors = [], []
    deadline = time.time() + seconds
    while len(values) < count and time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error() is not None:
            errors.append(str(m.error()))
            continue
        values.append(m.value().decode())
    c.close()
    return {"values": values, "errors": errors}


def main():
    mode, conf_file = sys.argv[1], sys.argv[2]
    with open(conf_file) as f:
        conf = json.load(f)
    token = conf.pop("shardlog.oauth.token", None)
    principal = conf.pop("shardlog.oauth.principal", None)
    expiry = conf.pop("shardlog.oauth.expiry", None)
    if token is not None:
        # confluent-kafka's oauth_cb: (token, expiry in seconds, principal).
        conf["oauth_cb"] = lambda _config: (token, float(expiry), principal)
    if mode == "roundtrip":
        out = roundtrip(conf, sys.argv[3], int(sys.argv[4]))
    elif mode == "refused":
        out = refused(conf)
    elif mode == "produce":
        out = produce(conf, sys.argv[3], int(sys.argv[4]), sys.argv[5])
    elif mode == "read":
        out = read(conf, sys.argv[3], int(sys.argv[4]))
    else:
        raise SystemExit("unknown mode " + mode)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
