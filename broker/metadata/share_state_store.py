"""Share-partition state in the ``share_group_states`` table (the share partitions'
``ShareStateStore``), one row per (group_id, topic_id, partition).

The rows live in the metadata database for the reason committed offsets do: every broker
reaches it, so a partition's new leader reads what the old one wrote without a
coordinator of its own (Kafka's share coordinator and its ``__share_group_state``
topic), and writes are as durable as the cluster's metadata.

Each row references its topic by id with ``ON DELETE CASCADE``: deleting the topic
deletes its share states in the same transaction, whichever broker deletes it, and a
write naming a topic id or partition that no longer exists is refused
(`UnknownSharePartitionError`) instead of leaving a row for a topic that will never
return. Transactions run one at a time (``store.py``), so the checks of a write (the
partition exists, its epochs are not older than the stored ones) and the write itself
see one moment of the store.

The state batches are one packed blob, not JSON: the row is rewritten at every
acknowledgement, and a partition with many records in flight holds hundreds of batches,
each four integers of fixed width. Packed, a batch takes 19 bytes whatever its offsets
(the JSON of one with offsets in the billions takes about 30), and a row's batches pack
and unpack in one pass of ``struct``, without a text parser. The price is a column SQL
cannot read (`unpack_batches` decodes it). The blob starts with a format byte, so that a
later layout can be told from this one.
"""

from __future__ import annotations

import asyncio
import struct
import uuid
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Connection, Row, delete, select, tuple_

from mirrorsim.broker.group.share_state import RecordState, ShareSnapshot, StateBatch
from mirrorsim.broker.group.share_state_store import (
    NO_LEADER_EPOCH,
    ShareStateKey,
    ShareStateWrite,
    StoredShareState,
    TopicIdPartition,
    UnknownSharePartitionError,
    apply_writes,
    reset_rows,
    take_over_rows,
)
from mirrorsim.broker.metadata import schema
from mirrorsim.broker.metadata.store import MetadataStore, transaction

Key = TypeVar("Key")

ROWS_PER_STATEMENT = 300
"""Keys per statement (three bound parameters each), under SQLite's 999-parameter limit
of older builds."""
BATCHES_FORMAT = 1
"""The layout of ``state_batches``: this byte, then `_BATCH` per state batch."""
_BATCH = struct.Struct(">qqhb")
"""first_offset, last_offset (int64), delivery_count (int16), state (int8): the widths of
Kafka's ``ShareSnapshotValue`` state batch."""


class SqlShareStateStore:
    def __init__(self, store: MetadataStore) -> None:
        self._store = store

    async def initialize(
        self,
        group_id: str,
        topic_id: uuid.UUID,
        partition: int,
        snapshot: ShareSnapshot,
        *,
        leader_epoch: int = NO_LEADER_EPOCH,
    ) -> bool:
        key = ShareStateKey(group_id, topic_id, partition)
        return await asyncio.to_thread(self._initialize, key, snapshot, leader_epoch)

    async def read(
        self, group_id: str, topic_id: uuid.UUID, partition: int
    ) -> ShareSnapshot | None:
        return await asyncio.to_thread(self._read, ShareStateKey(group_id, topic_id, partition))

    async def take_over(
        self, group_id: str, topic_id: uuid.UUID, partition: int, leader_epoch: int
    ) -> ShareSnapshot | None:
        key = ShareStateKey(group_id, topic_id, partition)
        (found,) = await self.take_over_many([(key, leader_epoch)])
        return found

    async def take_over_many(
        self, take_overs: Sequence[tuple[ShareStateKey, int]]
    ) -> list[ShareSnapshot | None]:
        """Several take-overs in one transaction (``BatchedShareStateStore``)."""
        return await asyncio.to_thread(self._take_over_many, list(take_overs))

    async def write(
        self,
        group_id: str,
        topic_id: uuid.UUID,
        partition: int,
        snapshot: ShareSnapshot,
        *,
        leader_epoch: int = NO_LEADER_EPOCH,
    ) -> None:
        await self.write_many(
            [ShareStateWrite(group_id, topic_id, partition, snapshot, leader_epoch)]
        )

    async def write_many(self, writes: Sequence[ShareStateWrite]) -> None:
        await asyncio.to_thread(self._write_many, list(writes))

    async def read_group(self, group_id: str) -> dict[TopicIdPartition, ShareSnapshot]:
        return await asyncio.to_thread(self._read_group, group_id)

    async def reset_start(
        self, group_id: str, topic_id: uuid.UUID, partition: int, start_offset: int
    ) -> None:
        key = ShareStateKey(group_id, topic_id, partition)
        await asyncio.to_thread(self._reset_start, key, start_offset)

    async def delete_group(self, group_id: str) -> None:
        table = schema.share_group_states
        await asyncio.to_thread(self._delete, table.c.group_id == group_id)

    async def delete_group_topics(self, group_id: str, topic_ids: Collection[uuid.UUID]) -> None:
        table = schema.share_group_states
        ids = sorted({str(topic_id) for topic_id in topic_ids})
        if ids:
            await asyncio.to_thread(
                self._delete, (table.c.group_id == group_id) & table.c.topic_id.in_(ids)
            )

    async def delete_topic(self, topic_id: uuid.UUID) -> None:
        table = schema.share_group_states
        await asyncio.to_thread(self._delete, table.c.topic_id == str(topic_id))

    def _initialize(self, key: ShareStateKey, snapshot: ShareSnapshot, leader_epoch: int) -> bool:
        table = schema.share_group_states
        with transaction(self._store.engine) as conn:
            _require_partitions(conn, [key])
            if _stored(conn, [key]):
                return False
            conn.execute(table.insert(), [_row(key, StoredShareState(snapshot, leader_epoch))])
            return True

    def _read(self, key: ShareStateKey) -> ShareSnapshot | None:
        with transaction(self._store.engine) as conn:
            row = _stored(conn, [key]).get(key)
            return None if row is None else row.snapshot

    def _take_over_many(
        self, take_overs: list[tuple[ShareStateKey, int]]
    ) -> list[ShareSnapshot | None]:
        keys = list(dict.fromkeys(key for key, _ in take_overs))
        with transaction(self._store.engine) as conn:
            found, changed = take_over_rows(_stored(conn, keys), take_overs)
            _replace(conn, changed)
            return found

    def _write_many(self, writes: list[ShareStateWrite]) -> None:
        keys = list(dict.fromkeys(write.key for write in writes))
        with transaction(self._store.engine) as conn:
            _require_partitions(conn, keys)
            _replace(conn, apply_writes(_stored(conn, keys), writes))

    def _reset_start(self, key: ShareStateKey, start_offset: int) -> None:
        with transaction(self._store.engine) as conn:
            _require_partitions(conn, [key])
            _replace(conn, reset_rows(_stored(conn, [key]), [(key, start_offset)]))

    def _read_group(self, group_id: str) -> dict[TopicIdPartition, ShareSnapshot]:
        table = schema.share_group_states
        with transaction(self._store.engine) as conn:
            return {
                TopicIdPartition(uuid.UUID(row.topic_id), row.partition): _snapshot(row)
                for row in conn.execute(select(table).where(table.c.group_id == group_id))
            }

    def _delete(self, where: ColumnElement[bool]) -> None:
        with transaction(self._store.engine) as conn:
            conn.execute(delete(schema.share_group_states).where(where))


def _replace(conn: Connection, rows: Mapping[ShareStateKey, StoredShareState]) -> None:
    """Replace ``rows`` with one delete per chunk of keys and one insert of many rows,
    whatever their number (as ``SqlOffsetStore`` commits offsets)."""
    if not rows:
        return
    table = schema.share_group_states
    for chunk in _chunks(list(rows), ROWS_PER_STATEMENT):
        conn.execute(delete(table).where(_key_in(chunk)))
    conn.execute(table.insert(), [_row(key, row) for key, row in rows.items()])


def _require_partitions(conn: Connection, keys: Sequence[ShareStateKey]) -> None:
    """Raise `UnknownSharePartitionError` for the first key whose topic id or partition is
    not in the metadata: the foreign key would refuse its row anyway, but only by failing
    the statement, which on PostgreSQL aborts the whole transaction."""
    wanted = {(str(key.topic_id), key.partition) for key in keys}
    topics, partitions = schema.topics, schema.partitions
    known: set[tuple[str, int]] = set()
    topic_ids = sorted({topic_id for topic_id, _ in wanted})
    for chunk in _chunks(topic_ids, ROWS_PER_STATEMENT):
        query = (
            select(topics.c.topic_id, partitions.c.partition)
            .join(partitions, partitions.c.topic == topics.c.name)
            .where(topics.c.topic_id.in_(chunk))
        )
        known.update((row.topic_id, row.partition) for row in conn.execute(query))
    for key in keys:
        if (str(key.topic_id), key.partition) not in known:
            raise UnknownSharePartitionError(key, "no such topic id or partition")


def _stored(conn: Connection, keys: list[ShareStateKey]) -> dict[ShareStateKey, StoredShareState]:
    table = schema.share_group_states
    found: dict[ShareStateKey, StoredShareState] = {}
    for chunk in _chunks(keys, ROWS_PER_STATEMENT):
        for row in conn.execute(select(table).where(_key_in(chunk))):
            key = ShareStateKey(row.group_id, uuid.UUID(row.topic_id), row.partition)
            found[key] = StoredShareState(_snapshot(row), row.leader_epoch)
    return found


def _key_in(keys: list[ShareStateKey]) -> ColumnElement[bool]:
    table = schema.share_group_states
    return tuple_(table.c.group_id, table.c.topic_id, table.c.partition).in_(
        [(key.group_id, str(key.topic_id), key.partition) for key in keys]
    )


def _row(key: ShareStateKey, stored: StoredShareState) -> dict[str, Any]:
    return {
        "group_id": key.group_id,
        "topic_id": str(key.topic_id),
        "partition": key.partition,
        "start_offset": stored.snapshot.start_offset,
        "state_epoch": stored.snapshot.state_epoch,
        "leader_epoch": stored.leader_epoch,
        "state_batches": pack_batches(stored.snapshot.state_batches),
    }


def _snapshot(row: Row[Any]) -> ShareSnapshot:
    return ShareSnapshot(
        start_offset=row.start_offset,
        state_batches=unpack_batches(bytes(row.state_batches)),
        state_epoch=row.state_epoch,
    )


def pack_batches(batches: Iterable[StateBatch]) -> bytes:
    return bytes([BATCHES_FORMAT]) + b"".join(
        _BATCH.pack(b.first_offset, b.last_offset, b.delivery_count, b.state) for b in batches
    )


def unpack_batches(packed: bytes) -> tuple[StateBatch, ...]:
    if not packed or packed[0] != BATCHES_FORMAT:
        raise ValueError(f"share state batches of unknown format {packed[:1].hex() or 'empty'}")
    return tuple(
        StateBatch(first, last, delivery_count, RecordState(state))
        for first, last, delivery_count, state in _BATCH.iter_unpack(packed[1:])
    )


def _chunks(keys: list[Key], size: int) -> list[list[Key]]:
    return [keys[i : i + size] for i in range(0, len(keys), size)]
