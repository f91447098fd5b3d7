"""A broker's periodic metadata refresh reads only the broker rows and the change counter
while nothing else changed, and still sees every change another broker makes: topics,
configs, reassignments, and a broker that stops heartbeating (fenced without any write)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from helpers.replication import FAST

from mirrorsim.broker.cluster import ClusterRunner
from mirrorsim.broker.metadata import MetadataStore, PartitionAssignment, TopicRecord
from mirrorsim.broker.server import Broker

SILENT_BROKER = 9
"""Registered straight in the store and never heartbeating: fenced once its session times
out, which changes no row but its own stale heartbeat."""


def _leads(broker: Broker, topic: str) -> bool:
    """Whether the broker's replica manager leads partition 0 of ``topic`` (as applied by
    its refreshes, not as the store has it)."""
    return any(
        p.topic == topic and p.index == 0 and p.is_leader
        for p in broker.replica_manager.partitions()
    )


def _by_id(cluster: ClusterRunner) -> tuple[Broker, Broker]:
    first, second = sorted(cluster.brokers, key=lambda b: b.broker_id)
    return first, second


async def test_changes_made_by_another_broker_are_seen(start_cluster: Any, wait_for: Any) -> None:
    first, second = _by_id(await start_cluster(brokers=2, configs=FAST))

    await second.controller.create_topic("orders", assignments={0: (1, 2)}, configs={})
    await wait_for(lambda: _leads(first, "orders"), message="new topic led by broker 1")

    await second.controller.set_topic_configs("orders", {"retention.ms": "5000"})
    await wait_for(
        lambda: first.snapshot.topics["orders"].configs == {"retention.ms": "5000"},
        message="topic config seen by broker 1",
    )

    moved = PartitionAssignment(0, (2, 1), leader=2, leader_epoch=1, isr=(2, 1))
    await asyncio.to_thread(second.store.update_partition, "orders", moved)
    await wait_for(
        lambda: _leads(second, "orders") and not _leads(first, "orders"),
        message="reassignment applied by both brokers",
    )


async def test_a_broker_that_stops_heartbeating_is_fenced_and_its_partitions_move(
    start_cluster: Any, wait_for: Any
) -> None:
    first, _ = _by_id(await start_cluster(brokers=2, configs=FAST))
    await asyncio.to_thread(first.store.register_broker, SILENT_BROKER, "127.0.0.1", 1, None)
    # a new incarnation starts fenced; the controller clears it (it holds no role yet)
    await wait_for(
        lambda: not next(b for b in first.store.brokers() if b.broker_id == SILENT_BROKER).fenced,
        message="the silent broker unfenced",
    )
    await first.refresh_metadata()
    assert SILENT_BROKER in {b.broker_id for b in first.live_brokers()}
    await first.controller.create_topic("fenced", assignments={0: (SILENT_BROKER, 1)}, configs={})
    # no heartbeat from the silent broker: the controller elects broker 1 cleanly
    await wait_for(lambda: _leads(first, "fenced"), message="broker 1 elected", timeout=10)
    assert SILENT_BROKER not in {b.broker_id for b in first.live_brokers()}
    stored = first.store.snapshot().topics["fenced"].partitions[0]
    assert (stored.leader, stored.isr) == (1, (1,))


async def test_an_unchanged_store_is_not_re_read(
    start_cluster: Any, wait_for: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster: ClusterRunner = await start_cluster(brokers=1, configs=FAST)
    broker = cluster.brokers[0]
    await broker.controller.create_topic("orders", assignments={0: (1,)}, configs={})
    await wait_for(lambda: _leads(broker, "orders"))
    snapshots, topic_reads = [], []
    store = broker.store
    snapshot, load_topics = store.snapshot, store._load_topics
    monkeypatch.setattr(store, "snapshot", lambda *a: snapshots.append(1) or snapshot(*a))
    monkeypatch.setattr(store, "_load_topics", lambda *a: topic_reads.append(1) or load_topics(*a))

    # the refresh and the controller each read the new topic once, then only the counter
    await wait_for(lambda: len(snapshots) >= 4, message="periodic refreshes")
    settled = len(topic_reads)
    assert settled <= 2
    await wait_for(lambda: len(snapshots) >= 12, message="periodic refreshes")
    assert len(topic_reads) == settled

    other_broker = await asyncio.to_thread(MetadataStore.open, cluster.spec.effective_metadata_url)
    try:
        created = TopicRecord(
            "payments",
            uuid.uuid4(),
            {},
            partitions=(PartitionAssignment(0, (1,), leader=1, leader_epoch=0, isr=(1,)),),
        )
        await asyncio.to_thread(other_broker.create_topic, created)
    finally:
        await asyncio.to_thread(other_broker.close)
    await wait_for(lambda: _leads(broker, "payments"), message="topic written by another broker")
    assert topic_reads
