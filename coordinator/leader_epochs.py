"""BumpLeaderEpochs (105): raise destination leader epochs to at least a given minimum.

The spec sends it from a destination partition leader to its controller so that the
epoch of new records is above every epoch already in the log (the source's included).
Here the metadata store is the controller, so every broker serves it and the STOPPING
entry action calls the same function locally. Each bump is a compare-and-set of the
partition row (the row the broker saw, with only the epoch raised): a concurrent
election or ISR change wins and the bump is retried on the re-read row.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from mirrorsim.broker.controller.alter_partition import PartitionWriter
from mirrorsim.broker.metadata.models import PartitionAssignment
from mirrorsim.protocol.errors import ErrorCode, KafkaError

BUMP_ATTEMPTS = 5


async def bump_leader_epochs(broker: Any, topic: str, minimums: Mapping[int, int]) -> None:
    """Leader epoch of each partition ≥ its minimum; refreshes metadata when one moved."""
    writer = PartitionWriter(broker.store.engine)
    moved = False
    for partition, minimum in minimums.items():
        for _ in range(BUMP_ATTEMPTS):
            current = _assignment(
                await asyncio.to_thread(broker.store.topics, [topic]), topic, partition
            )
            if current.leader_epoch >= minimum:
                break
            bumped = PartitionAssignment(
                current.partition, current.replicas, current.leader, minimum, current.isr
            )
            if await asyncio.to_thread(writer.compare_and_set, topic, current, bumped):
                moved = True
                break
        else:
            raise KafkaError(
                ErrorCode.REQUEST_TIMED_OUT,
                f"{topic}-{partition} kept changing; leader epoch not bumped to {minimum}",
            )
    if moved:
        await broker.refresh_metadata()


def _assignment(topics: Mapping[str, Any], topic: str, partition: int) -> PartitionAssignment:
    record = topics.get(topic)
    if record is None or partition >= len(record.partitions):
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{partition}")
    return record.partitions[partition]  # type: ignore[no-any-return]
