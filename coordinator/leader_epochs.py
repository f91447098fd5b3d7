"""BumpLeaderEpochs (105): raise destination leader epochs to at least a given minimum.

The spec sends it from a destination partition leader to its controller so that the
epoch of new records is above every epoch already in the log (the source's included).
Here the metadata store is the controller, so every broker serves it and the STOPPING
entry action calls the same function locally. A bump only ever raises an epoch (a
concurrent election that went higher wins) and touches nothing else in the row.

A failover stops every partition of the removed topics at once, and each partition's
STOPPING step asks for its own bump. ``LeaderEpochBumper`` gathers the bumps asked for
meanwhile into one metadata-store transaction and one metadata refresh per topic, so a
thousand partitions cost one write and one refresh rather than a thousand of each.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from mirrorsim.broker.metadata.models import UnknownTopicError
from mirrorsim.coordinator.batching import KeyedBatcher
from mirrorsim.protocol.errors import ErrorCode, KafkaError


async def bump_leader_epochs(broker: Any, topic: str, minimums: Mapping[int, int]) -> None:
    """Leader epoch of each partition ≥ its minimum; refreshes metadata when one moved."""
    try:
        raised = await asyncio.to_thread(broker.store.raise_leader_epochs, topic, minimums)
    except UnknownTopicError as exc:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, str(exc)) from None
    if raised:
        await broker.refresh_metadata()


class LeaderEpochBumper:
    """Concurrent bumps of one topic's partitions share one transaction and refresh."""

    def __init__(self, broker: Any) -> None:
        self._broker = broker
        self._batcher: KeyedBatcher[str, tuple[int, int]] = KeyedBatcher(self._bump)

    async def bump(self, topic: str, partition: int, minimum: int) -> None:
        """Returns once the metadata this broker serves carries the raised epoch."""
        await self._batcher.submit(topic, (partition, minimum))

    async def _bump(self, topic: str, requests: list[tuple[int, int]]) -> None:
        minimums: dict[int, int] = {}
        for partition, minimum in requests:
            minimums[partition] = max(minimum, minimums.get(partition, minimum))
        await bump_leader_epochs(self._broker, topic, minimums)

    async def close(self) -> None:
        await self._batcher.close()
