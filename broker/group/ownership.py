"""Which live broker coordinates a group (or a transactional id).

Kafka hashes the key onto a partition of ``__consumer_offsets`` (``__transaction_state``)
with ``toPositive(key.hashCode()) % partitions`` and the partition's leader coordinates
it. Offsets live in the metadata store here, so there is no such topic: the partition
number is mapped onto the live brokers in id order instead. Every broker sees the same
live set, so every broker names the same coordinator, and a change of the live set moves
some keys to another broker.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def coordinator_partition(key: str, partition_count: int) -> int:
    return (java_string_hash(key) & 0x7FFFFFFF) % partition_count


def coordinator_id(key: str, partition_count: int, live_broker_ids: Sequence[int]) -> int:
    """The broker coordinating ``key``; -1 when no broker is live."""
    if not live_broker_ids:
        return -1
    ordered = sorted(live_broker_ids)
    return ordered[coordinator_partition(key, partition_count) % len(ordered)]


def ownership(
    broker_id: int, partition_count: int, live_broker_ids: Sequence[int]
) -> Callable[[str], bool]:
    """Whether ``broker_id`` coordinates a key under this live set. A broker that is not
    live itself coordinates nothing."""
    ordered = tuple(sorted(live_broker_ids))

    def owns(key: str) -> bool:
        return broker_id in ordered and coordinator_id(key, partition_count, ordered) == broker_id

    return owns
