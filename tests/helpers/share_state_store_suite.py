"""The share-state store suite: share-partition state in the metadata database.

It needs a ``url`` fixture naming a fresh database; test_share_state_store.py collects it
on SQLite files, test_postgres.py on a private PostgreSQL server.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event, text

from mirrorsim.broker.group.batched_share_state_store import BatchedShareStateStore
from mirrorsim.broker.group.share_state import RecordState, ShareSnapshot, StateBatch
from mirrorsim.broker.group.share_state_store import (
    FencedLeaderEpochError,
    FencedStateEpochError,
    ShareStateWrite,
    TopicIdPartition,
    UnknownSharePartitionError,
)
from mirrorsim.broker.metadata import MetadataStore, PartitionAssignment, TopicRecord
from mirrorsim.broker.metadata.migrations import MIGRATIONS, migrate
from mirrorsim.broker.metadata.share_state_store import SqlShareStateStore
from mirrorsim.broker.metadata.store import create_store_engine
from mirrorsim.protocol.errors import ErrorCode

PARTITIONS = 3


@pytest.fixture
def metadata(url: str) -> Iterator[MetadataStore]:
    opened = MetadataStore.open(url)
    yield opened
    opened.close()


def _create_topic(store: MetadataStore, name: str) -> uuid.UUID:
    topic_id = uuid.uuid4()
    store.create_topic(
        TopicRecord(
            name=name,
            topic_id=topic_id,
            configs={},
            partitions=tuple(
                PartitionAssignment(p, (1,), leader=1, leader_epoch=0, isr=(1,))
                for p in range(PARTITIONS)
            ),
        )
    )
    return topic_id


def _snapshot(start: int, state_epoch: int = 0, batches: int = 0) -> ShareSnapshot:
    return ShareSnapshot(
        start_offset=start,
        state_batches=tuple(
            StateBatch(start + 10 * i, start + 10 * i + 4, i + 1, RecordState.ACKNOWLEDGED)
            for i in range(batches)
        ),
        state_epoch=state_epoch,
    )


def _count_transactions(store: MetadataStore) -> list[int]:
    begun: list[int] = []

    @event.listens_for(store.engine, "begin")
    def _on_begin(_conn: Any) -> None:
        begun.append(1)

    return begun


async def test_initialize_stores_a_state_only_once(metadata: MetadataStore) -> None:
    states = SqlShareStateStore(metadata)
    topic_id = _create_topic(metadata, "orders")
    assert await states.read("g", topic_id, 0) is None
    assert await states.initialize("g", topic_id, 0, _snapshot(5, state_epoch=1))
    assert not await states.initialize("g", topic_id, 0, _snapshot(99, state_epoch=7))
    assert await states.read("g", topic_id, 0) == _snapshot(5, state_epoch=1)
    assert await states.initialize("other", topic_id, 0, _snapshot(0))


async def test_a_write_replaces_the_whole_state_and_reads_back(metadata: MetadataStore) -> None:
    states = SqlShareStateStore(metadata)
    topic_id = _create_topic(metadata, "orders")
    batches = (
        StateBatch(2**62, 2**62 + 9, 1, RecordState.AVAILABLE),
        StateBatch(2**62 + 10, 2**62 + 10, 32767, RecordState.ARCHIVED),
        StateBatch(2**62 + 11, 2**62 + 500, 3, RecordState.ACKNOWLEDGED),
    )
    written = ShareSnapshot(start_offset=2**62, state_batches=batches, state_epoch=4)
    await states.initialize("g", topic_id, 1, _snapshot(0, state_epoch=4))
    await states.write("g", topic_id, 1, written)
    assert await states.read("g", topic_id, 1) == written
    await states.write("g", topic_id, 1, _snapshot(2**62 + 501, state_epoch=4))
    assert await states.read("g", topic_id, 1) == _snapshot(2**62 + 501, state_epoch=4)


async def test_a_write_without_a_stored_state_is_refused(metadata: MetadataStore) -> None:
    """Only initialize creates a state: a write that finds none is from a holder whose
    state is gone, and storing it would bring back what was deleted."""
    states = SqlShareStateStore(metadata)
    topic_id = _create_topic(metadata, "orders")
    with pytest.raises(FencedStateEpochError) as fenced:
        await states.write("g", topic_id, 0, _snapshot(10))
    assert fenced.value.code is ErrorCode.FENCED_STATE_EPOCH
    assert await states.read("g", topic_id, 0) is None
    assert await states.initialize("g", topic_id, 0, _snapshot(0))
    await states.write("g", topic_id, 0, _snapshot(10))
    assert await states.read("g", topic_id, 0) == _snapshot(10)


async def test_a_write_of_another_state_epoch_than_the_stored_is_fenced(
    metadata: MetadataStore,
) -> None:
    """A newer state epoch than the stored one is refused as an older one is: state
    epochs come only from the store, so no current holder can have it."""
    states = SqlShareStateStore(metadata)
    topic_id = _create_topic(metadata, "orders")
    await states.initialize("g", topic_id, 0, _snapshot(10, state_epoch=3))
    for other in (2, 4):
        with pytest.raises(FencedStateEpochError) as fenced:
            await states.write("g", topic_id, 0, _snapshot(50, state_epoch=other))
        assert fenced.value.code is ErrorCode.FENCED_STATE_EPOCH
        assert f"state epoch {other} is not the stored 3" in str(fenced.value)
    assert await states.read("g", topic_id, 0) == _snapshot(10, state_epoch=3)
    await states.write("g", topic_id, 0, _snapshot(11, state_epoch=3))
    assert await states.read("g", topic_id, 0) == _snapshot(11, state_epoch=3)


async def test_a_write_of_an_older_leader_epoch_is_fenced(metadata: MetadataStore) -> None:
    states = SqlShareStateStore(metadata)
    topic_id = _create_topic(metadata, "orders")
    await states.initialize("g", topic_id, 0, _snapshot(0))
    await states.write("g", topic_id, 0, _snapshot(10), leader_epoch=5)
    for stale in (4, -1):
        with pytest.raises(FencedLeaderEpochError) as fenced:
            await states.write("g", topic_id, 0, _snapshot(20), leader_epoch=stale)
        assert fenced.value.code is ErrorCode.FENCED_LEADER_EPOCH
    await states.write("g", topic_id, 0, _snapshot(30), leader_epoch=6)
    assert await states.read("g", topic_id, 0) == _snapshot(30)


async def test_a_take_over_raises_the_state_epoch_and_fences_the_previous_holder(
    metadata: MetadataStore,
) -> None:
    states = SqlShareStateStore(metadata)
    topic_id = _create_topic(metadata, "orders")
    assert await states.take_over("g", topic_id, 0, 4) is None
    assert await states.read("g", topic_id, 0) is None
    await states.initialize("g", topic_id, 0, _snapshot(0))
    await states.write("g", topic_id, 0, _snapshot(10, batches=2), leader_epoch=3)
    taken = await states.take_over("g", topic_id, 0, 4)
    assert taken == _snapshot(10, state_epoch=1, batches=2)
    assert await states.read("g", topic_id, 0) == taken
    with pytest.raises(FencedStateEpochError):
        await states.write("g", topic_id, 0, _snapshot(12), leader_epoch=4)
    await states.write("g", topic_id, 0, _snapshot(12, state_epoch=1), leader_epoch=4)
    assert await states.read("g", topic_id, 0) == _snapshot(12, state_epoch=1)


async def test_each_take_over_raises_the_state_epoch_again(metadata: MetadataStore) -> None:
    """The same broker loading a partition again (after unloading it) fences its own
    earlier load, whose state may be older than the stored one."""
    states = SqlShareStateStore(metadata)
    topic_id = _create_topic(metadata, "orders")
    await states.initialize("g", topic_id, 0, _snapshot(5))
    assert await states.take_over("g", topic_id, 0, 2) == _snapshot(5, state_epoch=1)
    assert await states.take_over("g", topic_id, 0, 2) == _snapshot(5, state_epoch=2)
    with pytest.raises(FencedStateEpochError):
        await states.write("g", topic_id, 0, _snapshot(6, state_epoch=1), leader_epoch=2)
    await states.write("g", topic_id, 0, _snapshot(6, state_epoch=2), leader_epoch=2)
    assert await states.read("g", topic_id, 0) == _snapshot(6, state_epoch=2)


async def test_a_take_over_from_an_older_leader_epoch_is_fenced(metadata: MetadataStore) -> None:
    """A broker that has not yet learned it lost leadership cannot take the partition
    back from the leader that loaded it since."""
    states = SqlShareStateStore(metadata)
    topic_id = _create_topic(metadata, "orders")
    await states.initialize("g", topic_id, 0, _snapshot(5))
    assert await states.take_over("g", topic_id, 0, 7) == _snapshot(5, state_epoch=1)
    with pytest.raises(FencedLeaderEpochError) as fenced:
        await states.take_over("g", topic_id, 0, 6)
    assert fenced.value.code is ErrorCode.FENCED_LEADER_EPOCH
    assert await states.read("g", topic_id, 0) == _snapshot(5, state_epoch=1)
    with pytest.raises(FencedLeaderEpochError):
        await states.write("g", topic_id, 0, _snapshot(6, state_epoch=1), leader_epoch=6)
    await states.write("g", topic_id, 0, _snapshot(6, state_epoch=1), leader_epoch=7)


async def test_an_initialized_state_keeps_its_leaders_epoch(metadata: MetadataStore) -> None:
    """Before the initializing leader's first write, a leader of an older epoch still
    cannot take the partition over."""
    states = SqlShareStateStore(metadata)
    topic_id = _create_topic(metadata, "orders")
    assert await states.initialize("g", topic_id, 0, _snapshot(5), leader_epoch=7)
    with pytest.raises(FencedLeaderEpochError):
        await states.take_over("g", topic_id, 0, 6)
    await states.write("g", topic_id, 0, _snapshot(6), leader_epoch=7)
    assert await states.read("g", topic_id, 0) == _snapshot(6)


async def test_a_reset_starts_the_state_over_and_fences_its_holder(
    metadata: MetadataStore,
) -> None:
    states = SqlShareStateStore(metadata)
    topic_id = _create_topic(metadata, "orders")
    await states.initialize("g", topic_id, 0, _snapshot(5, batches=3))
    held = await states.take_over("g", topic_id, 0, 4)
    assert held == _snapshot(5, state_epoch=1, batches=3)
    await states.reset_start("g", topic_id, 0, 1000)
    assert await states.read("g", topic_id, 0) == _snapshot(1000, state_epoch=2)
    with pytest.raises(FencedStateEpochError):
        await states.write("g", topic_id, 0, _snapshot(8, state_epoch=1), leader_epoch=4)
    # the reset keeps the stored leader epoch, and the next load takes the reset state
    with pytest.raises(FencedLeaderEpochError):
        await states.take_over("g", topic_id, 0, 3)
    assert await states.take_over("g", topic_id, 0, 4) == _snapshot(1000, state_epoch=3)


async def test_a_reset_of_a_partition_without_a_state_stores_one(metadata: MetadataStore) -> None:
    states = SqlShareStateStore(metadata)
    topic_id = _create_topic(metadata, "orders")
    await states.reset_start("g", topic_id, 2, 40)
    assert await states.read_group("g") == {TopicIdPartition(topic_id, 2): _snapshot(40)}
    assert not await states.initialize("g", topic_id, 2, _snapshot(0))
    assert await states.take_over("g", topic_id, 2, 0) == _snapshot(40, state_epoch=1)
    for unknown_topic, partition in ((uuid.uuid4(), 0), (topic_id, PARTITIONS)):
        with pytest.raises(UnknownSharePartitionError):
            await states.reset_start("g", unknown_topic, partition, 0)
    assert await states.read_group("g") == {
        TopicIdPartition(topic_id, 2): _snapshot(40, state_epoch=1)
    }


async def test_read_group_returns_every_partition_of_one_group(metadata: MetadataStore) -> None:
    states = SqlShareStateStore(metadata)
    orders, payments = _create_topic(metadata, "orders"), _create_topic(metadata, "payments")
    await states.initialize("g", orders, 0, _snapshot(1, batches=1))
    await states.initialize("g", orders, 2, _snapshot(2))
    await states.initialize("g", payments, 1, _snapshot(3, state_epoch=2))
    await states.initialize("h", orders, 0, _snapshot(4))
    assert await states.read_group("g") == {
        TopicIdPartition(orders, 0): _snapshot(1, batches=1),
        TopicIdPartition(orders, 2): _snapshot(2),
        TopicIdPartition(payments, 1): _snapshot(3, state_epoch=2),
    }
    assert await states.read_group("unknown") == {}


async def test_delete_group_forgets_only_that_group(metadata: MetadataStore) -> None:
    states = SqlShareStateStore(metadata)
    topic_id = _create_topic(metadata, "orders")
    for group in ("g", "h"):
        for partition in range(PARTITIONS):
            await states.initialize(group, topic_id, partition, _snapshot(partition))
    await states.delete_group("g")
    assert await states.read_group("g") == {}
    assert len(await states.read_group("h")) == PARTITIONS
    # a leader still holding a deleted state cannot write it back
    with pytest.raises(FencedStateEpochError):
        await states.write("g", topic_id, 0, _snapshot(0))
    assert await states.read_group("g") == {}
    assert await states.initialize("g", topic_id, 0, _snapshot(9))


async def test_delete_group_topics_forgets_only_those_topics_of_that_group(
    metadata: MetadataStore,
) -> None:
    states = BatchedShareStateStore(SqlShareStateStore(metadata))
    orders, payments, refunds = (
        _create_topic(metadata, name) for name in ("orders", "payments", "refunds")
    )
    for group in ("g", "h"):
        for topic_id in (orders, payments, refunds):
            await states.initialize(group, topic_id, 1, _snapshot(1))
    await states.initialize("g", orders, 0, _snapshot(0))
    await states.delete_group_topics("g", [orders, payments, uuid.uuid4()])
    await states.delete_group_topics("g", [])
    assert await states.read_group("g") == {TopicIdPartition(refunds, 1): _snapshot(1)}
    assert len(await states.read_group("h")) == 3
    with pytest.raises(FencedStateEpochError):
        await states.write("g", orders, 0, _snapshot(2))
    assert await states.read("g", orders, 0) is None
    assert await states.initialize("g", orders, 0, _snapshot(7))


async def test_delete_topic_forgets_only_that_topic(metadata: MetadataStore) -> None:
    states = SqlShareStateStore(metadata)
    orders, payments = _create_topic(metadata, "orders"), _create_topic(metadata, "payments")
    for topic_id in (orders, payments):
        await states.initialize("g", topic_id, 0, _snapshot(1))
        await states.initialize("h", topic_id, 1, _snapshot(2))
    await states.delete_topic(orders)
    assert await states.read_group("g") == {TopicIdPartition(payments, 0): _snapshot(1)}
    assert await states.read_group("h") == {TopicIdPartition(payments, 1): _snapshot(2)}


async def test_a_deleted_topic_takes_its_share_states_and_a_new_one_starts_empty(
    metadata: MetadataStore,
) -> None:
    """The rows cascade with the topic, whichever broker deletes it; a topic created again
    under the same name has a new id and no state; a late write of the old id is refused
    instead of storing a row no topic will ever have again."""
    states = SqlShareStateStore(metadata)
    old = _create_topic(metadata, "orders")
    await states.initialize("g", old, 0, _snapshot(100, batches=3))
    metadata.delete_topic("orders")
    assert await states.read_group("g") == {}
    new = _create_topic(metadata, "orders")
    assert await states.read("g", new, 0) is None
    for write in (
        states.write("g", old, 0, _snapshot(101)),
        states.initialize("g", old, 0, _snapshot(0)),
        states.reset_start("g", old, 0, 0),
        states.write("g", new, PARTITIONS, _snapshot(0)),
    ):
        with pytest.raises(UnknownSharePartitionError) as unknown:
            await write
        assert unknown.value.code is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert await states.read_group("g") == {}


async def test_write_many_stores_all_or_nothing_in_list_order(metadata: MetadataStore) -> None:
    states = SqlShareStateStore(metadata)
    topic_id = _create_topic(metadata, "orders")
    await states.initialize("g", topic_id, 0, _snapshot(0))
    await states.initialize("g", topic_id, 1, _snapshot(0, state_epoch=5))
    refused = [
        ShareStateWrite("g", topic_id, 0, _snapshot(10)),
        ShareStateWrite("g", topic_id, 1, _snapshot(10, state_epoch=4)),
    ]
    with pytest.raises(FencedStateEpochError):
        await states.write_many(refused)
    assert await states.read("g", topic_id, 0) == _snapshot(0)
    assert await states.read("g", topic_id, 1) == _snapshot(0, state_epoch=5)
    # a later write of the same partition in the list is checked against the earlier one
    with pytest.raises(FencedLeaderEpochError):
        await states.write_many(
            [
                ShareStateWrite("g", topic_id, 0, _snapshot(1), leader_epoch=2),
                ShareStateWrite("g", topic_id, 0, _snapshot(2), leader_epoch=1),
            ]
        )
    assert await states.read("g", topic_id, 0) == _snapshot(0)
    await states.write_many(
        [
            ShareStateWrite("g", topic_id, 0, _snapshot(1), leader_epoch=2),
            ShareStateWrite("g", topic_id, 0, _snapshot(2), leader_epoch=2),
        ]
    )
    assert await states.read("g", topic_id, 0) == _snapshot(2)


async def test_write_many_beyond_one_statement_of_keys(metadata: MetadataStore) -> None:
    states = SqlShareStateStore(metadata)
    topic_id = _create_topic(metadata, "orders")
    groups = [f"group-{n}" for n in range(700)]
    await asyncio.gather(*(states.initialize(g, topic_id, 0, _snapshot(0)) for g in groups))
    await states.write_many([ShareStateWrite(g, topic_id, 0, _snapshot(7)) for g in groups])
    await states.write_many(
        [ShareStateWrite(g, topic_id, 0, _snapshot(8, batches=2)) for g in groups]
    )
    for group in groups[::97]:
        assert await states.read_group(group) == {
            TopicIdPartition(topic_id, 0): _snapshot(8, batches=2)
        }


async def test_concurrent_writes_share_transactions(metadata: MetadataStore) -> None:
    """Every acknowledgement writes before it is answered: fifty at once take the first
    write's transaction and one more, and a fenced one fails only its own caller."""
    states = BatchedShareStateStore(SqlShareStateStore(metadata))
    topic_id = _create_topic(metadata, "orders")
    await states.initialize("fenced", topic_id, 0, _snapshot(0, state_epoch=9))
    groups = [f"group-{n}" for n in range(50)]
    await asyncio.gather(
        *(states.initialize(g, topic_id, p, _snapshot(0)) for g in groups for p in (1, 2))
    )
    begun = _count_transactions(metadata)
    await asyncio.gather(*(states.write(g, topic_id, 1, _snapshot(len(g))) for g in groups))
    assert len(begun) <= 3
    for group in groups:
        assert await states.read(group, topic_id, 1) == _snapshot(len(group))

    outcomes = await asyncio.gather(
        *(states.write(g, topic_id, 2, _snapshot(1)) for g in groups[:10]),
        states.write("fenced", topic_id, 0, _snapshot(1, state_epoch=8)),
        *(states.write(g, topic_id, 2, _snapshot(2)) for g in groups[10:20]),
        return_exceptions=True,
    )
    assert [type(o) for o in outcomes] == [type(None)] * 10 + [FencedStateEpochError] + [
        type(None)
    ] * 10
    for group in groups[:20]:
        assert await states.read(group, topic_id, 2) == _snapshot(1 if group in groups[:10] else 2)
    assert await states.read("fenced", topic_id, 0) == _snapshot(0, state_epoch=9)


async def test_concurrent_take_overs_share_transactions(metadata: MetadataStore) -> None:
    """A failover loads every partition the broker now leads at once."""
    states = BatchedShareStateStore(SqlShareStateStore(metadata))
    topic_id = _create_topic(metadata, "orders")
    groups = [f"group-{n}" for n in range(40)]
    await asyncio.gather(*(states.initialize(g, topic_id, 0, _snapshot(3)) for g in groups))
    begun = _count_transactions(metadata)
    taken = await asyncio.gather(*(states.take_over(g, topic_id, 0, 2) for g in groups))
    assert taken == [_snapshot(3, state_epoch=1)] * len(groups)
    assert len(begun) <= 3
    assert await states.read_group(groups[-1]) == {
        TopicIdPartition(topic_id, 0): _snapshot(3, state_epoch=1)
    }


async def test_concurrent_take_overs_of_one_partition_leave_only_the_last_taker_writing(
    metadata: MetadataStore,
) -> None:
    """Overlapping loads of one partition share transactions, yet each takes the epoch
    the one before it left, as if they had come one at a time."""
    states = BatchedShareStateStore(SqlShareStateStore(metadata))
    topic_id = _create_topic(metadata, "orders")
    await states.initialize("g", topic_id, 0, _snapshot(3, batches=1))
    taken = await asyncio.gather(*(states.take_over("g", topic_id, 0, 1) for _ in range(6)))
    epochs = [-1 if snapshot is None else snapshot.state_epoch for snapshot in taken]
    assert epochs == [1, 2, 3, 4, 5, 6]
    outcomes = await asyncio.gather(
        *(states.write("g", topic_id, 0, _snapshot(9, e), leader_epoch=1) for e in epochs),
        return_exceptions=True,
    )
    assert [type(o) for o in outcomes] == [FencedStateEpochError] * 5 + [type(None)]
    assert await states.read("g", topic_id, 0) == _snapshot(9, state_epoch=6)


async def test_state_survives_reopening_the_store(url: str) -> None:
    first = MetadataStore.open(url)
    try:
        topic_id = _create_topic(first, "orders")
        before = SqlShareStateStore(first)
        await before.initialize("g", topic_id, 2, _snapshot(0, state_epoch=3))
        await before.write(
            "g", topic_id, 2, _snapshot(40, state_epoch=3, batches=4), leader_epoch=6
        )
    finally:
        first.close()
    second = MetadataStore.open(url)
    try:
        states = SqlShareStateStore(second)
        assert await states.read("g", topic_id, 2) == _snapshot(40, state_epoch=3, batches=4)
        with pytest.raises(FencedLeaderEpochError):
            await states.write("g", topic_id, 2, _snapshot(41, state_epoch=3), leader_epoch=5)
    finally:
        second.close()


async def test_a_store_from_before_share_states_gets_the_table(url: str) -> None:
    engine = create_store_engine(url)
    with engine.begin() as conn:
        migrate(conn, MIGRATIONS[:9])  # the versions before share states
        conn.execute(text("DROP TABLE share_group_states"))
    engine.dispose()
    store = MetadataStore.open(url)
    try:
        topic_id = _create_topic(store, "orders")
        states = SqlShareStateStore(store)
        assert await states.initialize("g", topic_id, 0, _snapshot(1))
        store.delete_topic("orders")
        assert await states.read_group("g") == {}
    finally:
        store.close()
