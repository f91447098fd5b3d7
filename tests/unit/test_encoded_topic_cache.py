"""A broker's encoded Metadata topics are reused only for the very record, live brokers,
authorized operations and version they were encoded from, and are dropped once the
snapshot no longer holds their record."""

from __future__ import annotations

import dataclasses
import uuid

from mirrorsim.broker.handlers.metadata_cache import EncodedTopicCache
from mirrorsim.broker.metadata.models import PartitionAssignment, TopicRecord
from mirrorsim.protocol.messages.metadata_topics import EncodedTopic

LIVE = frozenset({1, 2})
UNSET = -(2**31)


def record(name: str = "orders", partitions: int = 2) -> TopicRecord:
    return TopicRecord(
        name=name,
        topic_id=uuid.uuid4(),
        partitions=tuple(
            PartitionAssignment(p, (1, 2), leader=1, leader_epoch=0, isr=(1, 2))
            for p in range(partitions)
        ),
    )


def encoded(version: int = 12) -> EncodedTopic:
    return EncodedTopic(version, b"entry", ((0, 3),))


def test_a_hit_needs_the_same_record_live_brokers_operations_and_version() -> None:
    cache = EncodedTopicCache()
    orders = record()
    entry = encoded()
    cache.put(12, orders, LIVE, UNSET, entry)
    assert cache.get(12, orders, frozenset({2, 1}), UNSET) is entry
    assert cache.get(11, orders, LIVE, UNSET) is None
    assert cache.get(12, orders, frozenset({1}), UNSET) is None
    assert cache.get(12, orders, LIVE, 0b1000) is None
    assert cache.get(12, dataclasses.replace(orders), LIVE, UNSET) is None, "an equal copy"
    assert cache.get(12, record(partitions=3), LIVE, UNSET) is None


def test_entries_of_records_the_snapshot_replaced_or_dropped_are_pruned() -> None:
    cache = EncodedTopicCache()
    orders, audit, gone = record("orders"), record("audit"), record("gone")
    for version in (9, 12):
        for topic in (orders, audit, gone):
            cache.put(version, topic, LIVE, UNSET, encoded(version))
    grown = record("orders", partitions=5)
    snapshot = {"orders": grown, "audit": audit}
    cache.prune(snapshot)
    assert len(cache) == 2
    assert cache.get(12, audit, LIVE, UNSET) is not None
    assert cache.get(9, audit, LIVE, UNSET) is not None
    cache.put(12, grown, LIVE, UNSET, encoded())
    cache.put(12, gone, LIVE, UNSET, encoded())
    cache.prune(snapshot)
    assert len(cache) == 4, "the same topics mapping is not scanned again"
    cache.prune(dict(snapshot))
    assert len(cache) == 3
