"""Committed consumer offsets in the ``group_offsets`` table (the group coordinator's
``OffsetStore``)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from sqlalchemy import Row, delete, select, tuple_

from mirrorsim.broker.group.offset_store import CommittedOffset, TopicPartition
from mirrorsim.broker.metadata import schema
from mirrorsim.broker.metadata.store import MetadataStore, transaction

Key = TypeVar("Key")

ROWS_PER_STATEMENT = 300
"""Keys per DELETE (three bound parameters each) or group ids per SELECT, under SQLite's
999-parameter limit of older builds."""


class SqlOffsetStore:
    def __init__(self, store: MetadataStore) -> None:
        self._store = store

    async def load_all(self) -> dict[str, dict[TopicPartition, CommittedOffset]]:
        return await asyncio.to_thread(self._load_all)

    async def load_group(self, group_id: str) -> dict[TopicPartition, CommittedOffset]:
        return await asyncio.to_thread(self._load_group, group_id)

    async def load_groups(
        self, group_ids: list[str]
    ) -> dict[str, dict[TopicPartition, CommittedOffset]]:
        """Several groups in one transaction (``BatchedOffsetStore``)."""
        return await asyncio.to_thread(self._load_groups, group_ids)

    async def commit(
        self, group_id: str, offsets: Mapping[TopicPartition, CommittedOffset]
    ) -> None:
        await asyncio.to_thread(self._commit, group_id, dict(offsets))

    async def commit_many(
        self, commits: list[tuple[str, dict[TopicPartition, CommittedOffset]]]
    ) -> None:
        """Several groups' commits in one transaction (``BatchedOffsetStore``)."""
        await asyncio.to_thread(self._commit_many, commits)

    async def delete(self, group_id: str, partitions: Iterable[TopicPartition]) -> None:
        await asyncio.to_thread(self._delete, group_id, list(partitions))

    async def delete_group(self, group_id: str) -> None:
        await asyncio.to_thread(self._delete_group, group_id)

    def _load_all(self) -> dict[str, dict[TopicPartition, CommittedOffset]]:
        result: dict[str, dict[TopicPartition, CommittedOffset]] = {}
        with transaction(self._store.engine) as conn:
            for row in conn.execute(select(schema.group_offsets)):
                result.setdefault(row.group_id, {})[TopicPartition(row.topic, row.partition)] = (
                    _committed(row)
                )
        return result

    def _load_group(self, group_id: str) -> dict[TopicPartition, CommittedOffset]:
        table = schema.group_offsets
        with transaction(self._store.engine) as conn:
            rows = conn.execute(select(table).where(table.c.group_id == group_id))
            return {TopicPartition(row.topic, row.partition): _committed(row) for row in rows}

    def _load_groups(
        self, group_ids: list[str]
    ) -> dict[str, dict[TopicPartition, CommittedOffset]]:
        table = schema.group_offsets
        result: dict[str, dict[TopicPartition, CommittedOffset]] = {}
        with transaction(self._store.engine) as conn:
            for chunk in _chunks(group_ids, ROWS_PER_STATEMENT):
                for row in conn.execute(select(table).where(table.c.group_id.in_(chunk))):
                    result.setdefault(row.group_id, {})[
                        TopicPartition(row.topic, row.partition)
                    ] = _committed(row)
        return result

    def _commit(self, group_id: str, offsets: dict[TopicPartition, CommittedOffset]) -> None:
        self._commit_many([(group_id, offsets)])

    def _commit_many(
        self, commits: list[tuple[str, dict[TopicPartition, CommittedOffset]]]
    ) -> None:
        """Replace the rows of every committed partition with two statements (a delete and
        an insert of many rows), whatever the number of groups and partitions: a batch of
        a thousand offsets costs about what one row costs, where an update-or-insert per
        row would compile and run two statements each."""
        latest: dict[tuple[str, str, int], CommittedOffset] = {}
        for group_id, offsets in commits:
            for tp, offset in offsets.items():
                latest[(group_id, tp.topic, tp.partition)] = offset
        if not latest:
            return
        table = schema.group_offsets
        with transaction(self._store.engine) as conn:
            for keys in _chunks(list(latest), ROWS_PER_STATEMENT):
                conn.execute(
                    delete(table).where(
                        tuple_(table.c.group_id, table.c.topic, table.c.partition).in_(keys)
                    )
                )
            conn.execute(
                table.insert(),
                [
                    {
                        "group_id": group_id,
                        "topic": topic,
                        "partition": partition,
                        "committed_offset": offset.committed_offset,
                        "leader_epoch": offset.leader_epoch,
                        "metadata": offset.metadata,
                        "commit_timestamp": offset.commit_timestamp,
                    }
                    for (group_id, topic, partition), offset in latest.items()
                ],
            )

    def _delete(self, group_id: str, partitions: list[TopicPartition]) -> None:
        if not partitions:
            return
        table = schema.group_offsets
        with transaction(self._store.engine) as conn:
            conn.execute(
                delete(table).where(
                    table.c.group_id == group_id,
                    tuple_(table.c.topic, table.c.partition).in_(
                        [(tp.topic, tp.partition) for tp in partitions]
                    ),
                )
            )

    def _delete_group(self, group_id: str) -> None:
        table = schema.group_offsets
        with transaction(self._store.engine) as conn:
            conn.execute(delete(table).where(table.c.group_id == group_id))


def _chunks(keys: list[Key], size: int) -> list[list[Key]]:
    return [keys[i : i + size] for i in range(0, len(keys), size)]


def _committed(row: Row[Any]) -> CommittedOffset:
    return CommittedOffset(
        committed_offset=row.committed_offset,
        leader_epoch=row.leader_epoch,
        metadata=row.metadata,
        commit_timestamp=row.commit_timestamp,
    )
