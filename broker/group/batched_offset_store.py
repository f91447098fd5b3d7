"""Offset commits that arrive together are written in one transaction.

Each OffsetCommit carries one group, and the coordinator acknowledges it only once the
offsets are durable. Written one transaction each, a burst of commits (the mirror
metadata sync commits every behind group of a mirror at once, hundreds of requests in
flight) makes the writers queue for the metadata database's single write lock, and
SQLite's busy handler backs off in sleeps, so a burst costs far more than its writes.
Here every commit that arrives while a write is running waits for the next one, and that
write stores all of them in one transaction (``commit_many``); each caller still returns
only after its own offsets are stored, and a failed write fails every commit in it.
A lone commit is written at once, as before.

Group loads coalesce the same way: a burst of commits for groups this broker has not
served since it became their coordinator (the first sync cycle of a mirror commits
hundreds of new groups) reads every group in one transaction (``load_groups``) instead of
one transaction each, which on SQLite would also queue for the write lock that every
transaction takes. ``load_all`` and deletions pass straight through.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from mirrorsim.broker.group.coalescer import Coalescer
from mirrorsim.broker.group.offset_store import CommittedOffset, OffsetStore, TopicPartition

GroupCommits = list[tuple[str, dict[TopicPartition, CommittedOffset]]]
GroupOffsets = dict[TopicPartition, CommittedOffset]


class BatchableOffsetStore(OffsetStore, Protocol):
    async def commit_many(self, commits: GroupCommits) -> None:
        """Upsert several groups' offsets in one transaction, applied in list order."""
        ...

    async def load_groups(self, group_ids: list[str]) -> dict[str, GroupOffsets]:
        """Several groups' committed offsets, read in one transaction; a group without
        any is absent."""
        ...


class BatchedOffsetStore:
    """An ``OffsetStore`` that coalesces concurrent ``commit`` calls into ``commit_many``
    and concurrent ``load_group`` calls into ``load_groups``."""

    def __init__(self, store: BatchableOffsetStore) -> None:
        self._store = store
        self._commits = Coalescer(self._commit_many, "group offset commits")
        self._loads = Coalescer(self._load_groups, "group offset loads")

    async def load_all(self) -> dict[str, dict[TopicPartition, CommittedOffset]]:
        return await self._store.load_all()

    async def load_group(self, group_id: str) -> dict[TopicPartition, CommittedOffset]:
        return await self._loads.submit(group_id)

    async def commit(
        self, group_id: str, offsets: Mapping[TopicPartition, CommittedOffset]
    ) -> None:
        await self._commits.submit((group_id, dict(offsets)))

    async def delete(self, group_id: str, partitions: Iterable[TopicPartition]) -> None:
        await self._store.delete(group_id, partitions)

    async def delete_group(self, group_id: str) -> None:
        await self._store.delete_group(group_id)

    async def _commit_many(self, commits: GroupCommits) -> list[None]:
        await self._store.commit_many(commits)
        return [None] * len(commits)

    async def _load_groups(self, group_ids: list[str]) -> list[GroupOffsets]:
        found = await self._store.load_groups(sorted(set(group_ids)))
        return [dict(found.get(group_id, {})) for group_id in group_ids]
