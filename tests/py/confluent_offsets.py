"""confluent-kafka's views of one partition's offsets, for
tests/datapath_protocol.rs: consumer watermarks and offsets_for_times, and
AdminClient.list_offsets with every OffsetSpec (earliest, latest,
max_timestamp (ListOffsets v7+, KIP-734), for_timestamp).

usage: confluent_offsets.py BOOTSTRAP TOPIC PARTITION TS [TS ...]
"""

import sys

from confluent_kafka import Consumer, IsolationLevel, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from roundtrip import emit


def main():
    bootstrap, topic, partition = sys.argv[1], sys.argv[2], int(sys.argv[3])
    timestamps = [int(t) for t in sys.argv[4:]]
    c = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "shardlog-test",
        "enable.auto.commit": False,
    })
    low, high = c.get_watermark_offsets(TopicPartition(topic, partition), timeout=20)
    # One lookup per call: a request naming the same partition twice is not
    # what clients send.
    found = [
        c.offsets_for_times([TopicPartition(topic, partition, ts)], timeout=20)[0]
        for ts in timestamps
    ]
    c.close()

    admin = AdminClient({"bootstrap.servers": bootstrap})
    specs = {
        "earliest": OffsetSpec.earliest(),
        "latest": OffsetSpec.latest(),
        "max_timestamp": OffsetSpec.max_timestamp(),
    }
    for ts in timestamps:
        specs[f"ts:{ts}"] = OffsetSpec.for_timestamp(ts)
    listed = {}
    for name, spec in specs.items():
        futures = admin.list_offsets(
            {TopicPartition(topic, partition): spec},
            isolation_level=IsolationLevel.READ_UNCOMMITTED,
            request_timeout=20,
        )
        info = futures[TopicPartition(topic, partition)].result()
        listed[name] = [info.offset, info.timestamp]

    emit({
        "watermarks": [low, high],
        "offsets_for_times": {str(ts): tp.offset for ts, tp in zip(timestamps, found)},
        "offsets_for_times_errors": [str(tp.error) for tp in found if tp.error is not None],
        "list_offsets": listed,
    })


if __name__ == "__main__":
    main()
