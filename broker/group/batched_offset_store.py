"""Offset commits that arrive together are written in one transaction.

Each OffsetCommit carries one group, and the coordinator acknowledges it only once the
offsets are durable. Written one transaction each, a burst of commits (the mirror
metadata sync commits every behind group of a mirror at once, hundreds of requests in
flight) makes the writers queue for the metadata database's single write lock, and
SQLite's busy handler backs off in sleeps, so a burst costs far more than its writes.
Here every commit that arrives while a write is running waits for the next one, and that
write stores all of them in one transaction (``commit_many``); each caller still returns
only after its own offsets are stored, and a failed write fails every commit in it.
A lone commit is written at once, as before. Reads and deletions pass straight through.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Protocol

from mirrorsim.broker.group.offset_store import CommittedOffset, OffsetStore, TopicPartition

GroupCommits = list[tuple[str, dict[TopicPartition, CommittedOffset]]]


class BatchableOffsetStore(OffsetStore, Protocol):
    async def commit_many(self, commits: GroupCommits) -> None:
        """Upsert several groups' offsets in one transaction, applied in list order."""
        ...


class BatchedOffsetStore:
    """An ``OffsetStore`` that coalesces concurrent ``commit`` calls into ``commit_many``."""

    def __init__(self, store: BatchableOffsetStore) -> None:
        self._store = store
        self._pending: list[tuple[str, dict[TopicPartition, CommittedOffset], asyncio.Future[None]]]
        self._pending = []
        self._writer: asyncio.Task[None] | None = None

    async def load_all(self) -> dict[str, dict[TopicPartition, CommittedOffset]]:
        return await self._store.load_all()

    async def load_group(self, group_id: str) -> dict[TopicPartition, CommittedOffset]:
        return await self._store.load_group(group_id)

    async def commit(
        self, group_id: str, offsets: Mapping[TopicPartition, CommittedOffset]
    ) -> None:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.add_done_callback(_retrieve)
        self._pending.append((group_id, dict(offsets), done))
        if self._writer is None:
            self._writer = asyncio.get_running_loop().create_task(
                self._write_pending(), name="group offset commits"
            )
        await asyncio.shield(done)

    async def delete(self, group_id: str, partitions: Iterable[TopicPartition]) -> None:
        await self._store.delete(group_id, partitions)

    async def delete_group(self, group_id: str) -> None:
        await self._store.delete_group(group_id)

    async def _write_pending(self) -> None:
        """Write until nothing is pending; commits queued during a write form the next."""
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                try:
                    await self._store.commit_many([(g, offsets) for g, offsets, _ in batch])
                except Exception as exc:
                    for _, _, done in batch:
                        if not done.done():
                            done.set_exception(exc)
                except BaseException:
                    for _, _, done in batch:
                        done.cancel()
                    raise
                else:
                    for _, _, done in batch:
                        if not done.done():
                            done.set_result(None)
        finally:
            self._writer = None


def _retrieve(done: asyncio.Future[None]) -> None:
    """A caller cancelled while its commit was being written never reads the outcome;
    reading it here keeps a failed write from being reported as never retrieved."""
    if not done.cancelled():
        done.exception()
