"""A kafka-python producer and consumer over SSL that keep their
connections across a certificate rotation (tests/tls_rotation.rs).

  tls_rotation.py <bootstrap> <topic> <cafile>

Reads one command per stdin line and prints one JSON line per command:
  round <n>   produces "rotation-<n>" to partition 0 (acks=1), fetches it
              back with the consumer, and prints {"offset", "value",
              "conns": [{"role", "sock", "cert"}]}: per connection of the
              two clients to a broker (not the bootstrap one), the id of its
              SSL socket object (the same id: the same connection) and the
              broker certificate that connection's handshake got (PEM).
  quit        closes both clients.
A client error ends the script with a traceback (non-zero status).
"""

import json
import ssl
import sys

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.net.compat import KafkaNetClient


def main():
    bootstrap, topic, cafile = sys.argv[1:4]
    clients = []

    def client_factory(**configs):
        client = KafkaNetClient(**configs)
        clients.append((configs.get("metric_group_prefix", "consumer"), client))
        return client

    tls = {
        "bootstrap_servers": bootstrap,
        "security_protocol": "SSL",
        "ssl_cafile": cafile,
        "ssl_check_hostname": True,
        "kafka_client": client_factory,
    }
    producer = KafkaProducer(acks=1, linger_ms=0, **tls)
    consumer = KafkaConsumer(enable_auto_commit=False, **tls)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "quit":
            break
        n = words[1]
        value = ("rotation-%s" % n).encode()
        meta = producer.send(topic, value=value, partition=0).get(timeout=60)
        consumer.seek(tp, meta.offset)
        got = None
        for _ in range(120):
            records = consumer.poll(timeout_ms=500).get(tp, [])
            if records:
                got = records[0]
                break
        conns = []
        for role, client in clients:
            for node_id, conn in list(client._manager._conns.items()):
                if not isinstance(node_id, int) or conn.transport is None:
                    continue
                sock = conn.transport._sock
                der = sock.getpeercert(binary_form=True)
                conns.append({
                    "role": role,
                    "node": node_id,
                    "sock": id(sock),
                    "cert": ssl.DER_cert_to_PEM_cert(der),
                })
        print(json.dumps({
            "offset": meta.offset,
            "value": got.value.decode() if got else None,
            "conns": conns,
        }), flush=True)
    producer.close()
    consumer.close()


if __name__ == "__main__":
    main()
