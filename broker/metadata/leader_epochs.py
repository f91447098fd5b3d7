"""BumpLeaderEpochs (105): raise destination leader epochs to at least a given minimum.

The spec sends it from a destination partition leader to its controller so that the
epoch of new records is above every epoch already in the log (the source's included).
Here the metadata store is the controller, so every broker serves it and the mirror
coordinator's STOPPING entry action calls the same function locally. A bump only ever
raises an epoch (a concurrent election that went higher wins) and touches nothing else in
the row. It lives in the metadata layer so the handler and the coordinator share it
without the handlers importing the coordinator.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Protocol, runtime_checkable

from mirrorsim.broker.metadata.models import UnknownTopicError
from mirrorsim.protocol.errors import ErrorCode, KafkaError


@runtime_checkable
class LeaderEpochStore(Protocol):
    def raise_leader_epochs(self, topic: str, minimums: Mapping[int, int]) -> list[int]: ...


@runtime_checkable
class LeaderEpochHost(Protocol):
    """What a bump needs of the broker: its metadata store and a refresh of what it serves."""

    @property
    def store(self) -> LeaderEpochStore: ...

    async def refresh_metadata(self) -> None: ...


async def bump_leader_epochs(
    broker: LeaderEpochHost, topic: str, minimums: Mapping[int, int]
) -> None:
    """Leader epoch of each partition ≥ its minimum; refreshes metadata when one moved."""
    try:
        raised = await asyncio.to_thread(broker.store.raise_leader_epochs, topic, minimums)
    except UnknownTopicError as exc:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, str(exc)) from None
    if raised:
        await broker.refresh_metadata()
