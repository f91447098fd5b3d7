"""Share-state writes that arrive together are stored in one transaction.

Every acknowledgement of a share consumer changes its share partition's state, and the
leader answers it only once that state is durable: a busy share group writes as often as
its consumers acknowledge, across all its partitions, each write one row. Here every
write that arrives while one is running waits for the next, which stores them all in one
transaction (``write_many``, through the `Coalescer`), as committed offsets are
(``BatchedOffsetStore``); each caller returns once its own state is stored.

Take-overs coalesce the same way (``take_over_many``): a broker that becomes the leader
of many partitions (a failover, a restart) loads the share partitions of all of them at
once, and each take-over writes (it raises the stored state epoch).

A batch call is all or nothing, but the items coalesced into one call come from
unrelated partitions: one that is refused (a deposed leader's, a deleted topic's) must
not fail the others. A refused batch is therefore run again one item at a time, in
order, and each caller gets its own outcome; refusals are rare (a leader move, a reset,
a deletion), so the extra transactions are too. A failure of the database itself fails
every item of the batch, as it does for offset commits. Initialization, plain reads,
caller-built batches of writes, group reads, resets and deletions pass straight through.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Protocol, TypeVar

from mirrorsim.broker.group.coalescer import Coalescer
from mirrorsim.broker.group.share_state import ShareSnapshot
from mirrorsim.broker.group.share_state_store import (
    NO_LEADER_EPOCH,
    ShareStateKey,
    ShareStateRejected,
    ShareStateStore,
    ShareStateWrite,
    TopicIdPartition,
)

Item = TypeVar("Item")
Result = TypeVar("Result")
TakeOver = tuple[ShareStateKey, int]


class BatchableShareStateStore(ShareStateStore, Protocol):
    async def take_over_many(self, take_overs: Sequence[TakeOver]) -> list[ShareSnapshot | None]:
        """Several ``(key, leader_epoch)`` take-overs in one transaction, in list order:
        what each reads, or none applied and the first `ShareStateRejected` raised."""
        ...


class BatchedShareStateStore:
    """A `ShareStateStore` that coalesces concurrent ``write`` calls into ``write_many``
    and concurrent ``take_over`` calls into ``take_over_many``."""

    def __init__(self, store: BatchableShareStateStore) -> None:
        self._store = store
        self._writes: Coalescer[ShareStateWrite, ShareStateRejected | None] = Coalescer(
            self._write_batch, "share state writes"
        )
        self._take_overs: Coalescer[TakeOver, ShareSnapshot | ShareStateRejected | None] = (
            Coalescer(self._take_over_batch, "share state take-overs")
        )

    async def initialize(
        self,
        group_id: str,
        topic_id: uuid.UUID,
        partition: int,
        snapshot: ShareSnapshot,
        *,
        leader_epoch: int = NO_LEADER_EPOCH,
    ) -> bool:
        return await self._store.initialize(
            group_id, topic_id, partition, snapshot, leader_epoch=leader_epoch
        )

    async def read(
        self, group_id: str, topic_id: uuid.UUID, partition: int
    ) -> ShareSnapshot | None:
        return await self._store.read(group_id, topic_id, partition)

    async def take_over(
        self, group_id: str, topic_id: uuid.UUID, partition: int, leader_epoch: int
    ) -> ShareSnapshot | None:
        key = ShareStateKey(group_id, topic_id, partition)
        found = await self._take_overs.submit((key, leader_epoch))
        if isinstance(found, ShareStateRejected):
            raise found
        return found

    async def write(
        self,
        group_id: str,
        topic_id: uuid.UUID,
        partition: int,
        snapshot: ShareSnapshot,
        *,
        leader_epoch: int = NO_LEADER_EPOCH,
    ) -> None:
        rejected = await self._writes.submit(
            ShareStateWrite(group_id, topic_id, partition, snapshot, leader_epoch)
        )
        if rejected is not None:
            raise rejected

    async def write_many(self, writes: Sequence[ShareStateWrite]) -> None:
        await self._store.write_many(writes)

    async def read_group(self, group_id: str) -> dict[TopicIdPartition, ShareSnapshot]:
        return await self._store.read_group(group_id)

    async def reset_start(
        self, group_id: str, topic_id: uuid.UUID, partition: int, start_offset: int
    ) -> None:
        await self._store.reset_start(group_id, topic_id, partition, start_offset)

    async def delete_group(self, group_id: str) -> None:
        await self._store.delete_group(group_id)

    async def delete_group_topics(self, group_id: str, topic_ids: Collection[uuid.UUID]) -> None:
        await self._store.delete_group_topics(group_id, topic_ids)

    async def delete_topic(self, topic_id: uuid.UUID) -> None:
        await self._store.delete_topic(topic_id)

    async def _write_batch(self, writes: list[ShareStateWrite]) -> list[ShareStateRejected | None]:
        async def write_all(batch: list[ShareStateWrite]) -> list[None]:
            await self._store.write_many(batch)
            return [None] * len(batch)

        return await _each_outcome(write_all, writes)

    async def _take_over_batch(
        self, take_overs: list[TakeOver]
    ) -> list[ShareSnapshot | ShareStateRejected | None]:
        return await _each_outcome(self._store.take_over_many, take_overs)


async def _each_outcome(
    run: Callable[[list[Item]], Awaitable[list[Result]]], items: list[Item]
) -> list[Result | ShareStateRejected]:
    """``run`` over all ``items`` in one call; if it refuses one of them, over each item
    alone, in order, so that each gets its own result or refusal."""
    try:
        return list(await run(items))
    except ShareStateRejected as rejected:
        if len(items) == 1:
            return [rejected]
    outcomes: list[Result | ShareStateRejected] = []
    for item in items:
        try:
            outcomes.extend(await run([item]))
        except ShareStateRejected as rejected:
            outcomes.append(rejected)
    return outcomes
