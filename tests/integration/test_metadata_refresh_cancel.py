"""A metadata refresh cancelled while it applies partition changes (a broker stopping
cancels its periodic refresh) leaves nothing unapplied: the next refresh applies it.

Before, the refresh had already taken the new snapshot, so the next one saw no change; a
stopping broker's controlled shutdown then replayed ``__mirror_state`` from a partition
its replica manager did not host (UNKNOWN_TOPIC_OR_PARTITION, "did not stop cleanly").
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from mirrorsim.broker.metadata import PartitionAssignment, TopicRecord
from mirrorsim.broker.server import Broker

QUIET = {"metadata.refresh.interval.ms": 600_000, "controlled.shutdown.enable": False}
"""No periodic refresh or controller tick: the test's refreshes are the only ones."""


def _hosts(broker: Broker, topic: str) -> bool:
    return any(p.topic == topic for p in broker.replica_manager.partitions())


async def test_a_refresh_cancelled_mid_apply_is_completed_by_the_next(
    start_cluster: Any, wait_for: Any
) -> None:
    (broker,) = (await start_cluster(brokers=1, configs=QUIET)).brokers
    topics = [f"t{i}" for i in range(20)]
    for name in topics:
        record = TopicRecord(
            name,
            uuid.uuid4(),
            {},
            partitions=(PartitionAssignment(0, (1,), leader=1, leader_epoch=0, isr=(1,)),),
        )
        await asyncio.to_thread(broker.store.create_topic, record)

    refresh = asyncio.create_task(broker.refresh_metadata())
    await wait_for(lambda: "t0" in broker.snapshot.topics, message="the new snapshot taken")
    assert not refresh.done()
    refresh.cancel()
    await asyncio.gather(refresh, return_exceptions=True)
    assert not all(_hosts(broker, name) for name in topics), "cancelled before applying all"

    await broker.refresh_metadata()

    assert all(_hosts(broker, name) for name in topics)
