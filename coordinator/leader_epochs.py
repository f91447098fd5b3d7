"""Batched leader-epoch bumps for the STOPPING entry action.

A failover stops every partition of the removed topics at once, and each partition's
STOPPING step asks for its own bump. ``LeaderEpochBumper`` gathers the bumps asked for
meanwhile into one metadata-store transaction and one metadata refresh per topic, so a
thousand partitions cost one write and one refresh rather than a thousand of each.
"""

from __future__ import annotations

from mirrorsim.broker.metadata.leader_epochs import LeaderEpochHost, bump_leader_epochs
from mirrorsim.coordinator.batching import KeyedBatcher


class LeaderEpochBumper:
    """Concurrent bumps of one topic's partitions share one transaction and refresh."""

    def __init__(self, broker: LeaderEpochHost) -> None:
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
