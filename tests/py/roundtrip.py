"""Shared pieces of the client round-trip scripts (tests/datapath_*.rs run
them with the test venv's python).

Message `seq` (0..count) goes to partition `seq % partitions`; its value is
`b"%010d:" % seq` followed by filler bytes that depend on `seq`, `size` bytes
in all, so a consumer can check content, order and completeness from the
value alone. Scripts print one JSON object on their last stdout line; the
Rust test makes the assertions.
"""

import argparse
import json
import sys

_FILL_VARIANTS = 64
_fill_cache = {}


def payload(seq, size):
    head = b"%010d:" % seq
    key = (seq % _FILL_VARIANTS, size)
    fill = _fill_cache.get(key)
    if fill is None:
        v = key[0]
        fill = bytes((v * 31 + i) % 251 for i in range(max(size - len(head), 0)))
        _fill_cache[key] = fill
    return head + fill


def parse_args(description):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("bootstrap")
    ap.add_argument("topic")
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--partitions", type=int, required=True)
    ap.add_argument("--size", type=int, default=100)
    # both: produce, then consume; concurrent: the consumer starts first and
    # tails the partitions while the producer runs.
    ap.add_argument("--mode", choices=["produce", "consume", "both", "concurrent"], default="both")
    # A guard against a broker that stops serving (not a speed assertion):
    # give up when nothing arrives for this long and report what we have.
    ap.add_argument("--idle-timeout", type=float, default=60.0)
    # The producer's compression.type (Kafka's names); none by default.
    ap.add_argument("--compression", choices=["none", "gzip", "snappy", "lz4", "zstd"], default="none")
    return ap.parse_args()


class Checker:
    """Checks what a consumer read against what the producer sent."""

    def __init__(self, count, partitions, size):
        self.count = count
        self.partitions = partitions
        self.size = size
        self.seen = bytearray(count)
        self.consumed = 0
        self.next_offset = [0] * partitions
        self.last_seq = [-1] * partitions
        self.per_partition = [0] * partitions
        self.offset_gaps = []
        self.wrong_partition = 0
        self.bad_payloads = []
        self.out_of_order = 0
        self.out_of_order_at = []
        self.duplicates = 0
        self.unknown = 0

    def see(self, partition, offset, value):
        self.consumed += 1
        self.per_partition[partition] += 1
        if offset != self.next_offset[partition]:
            if len(self.offset_gaps) < 10:
                self.offset_gaps.append([partition, self.next_offset[partition], offset])
        self.next_offset[partition] = offset + 1
        try:
            seq = int(value[:10])
        except (TypeError, ValueError):
            self.unknown += 1
            return
        if not 0 <= seq < self.count:
            self.unknown += 1
            return
        if value != payload(seq, self.size):
            if len(self.bad_payloads) < 10:
                self.bad_payloads.append([partition, offset, seq])
        if seq % self.partitions != partition:
            self.wrong_partition += 1
        if seq <= self.last_seq[partition]:
            self.out_of_order += 1
            if len(self.out_of_order_at) < 10:
                self.out_of_order_at.append([partition, offset, seq, self.last_seq[partition]])
        self.last_seq[partition] = seq
        if self.seen[seq]:
            self.duplicates += 1
        self.seen[seq] = 1

    def complete(self):
        return self.consumed >= self.count

    def report(self):
        missing = self.count - sum(self.seen)
        return {
            "consumed": self.consumed,
            "missing": missing,
            "duplicates": self.duplicates,
            "unknown": self.unknown,
            "offset_gaps": self.offset_gaps,
            "bad_payloads": self.bad_payloads,
            "wrong_partition": self.wrong_partition,
            "out_of_order": self.out_of_order,
            # [partition, offset, seq, previous seq] of the first few
            "out_of_order_at": self.out_of_order_at,
            "per_partition": self.per_partition,
            "next_offsets": self.next_offset,
        }


def emit(result):
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
