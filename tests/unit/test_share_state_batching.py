"""Share-state stores without a database: the fencing rules (``InMemoryShareStateStore``),
the coalescing wrapper, whose callers see exactly what writing one at a time would have
given them, and the packed encoding of state batches."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.broker.group.batched_share_state_store import BatchedShareStateStore
from mirrorsim.broker.group.share_state import RecordState, ShareSnapshot, StateBatch
from mirrorsim.broker.group.share_state_store import (
    FencedLeaderEpochError,
    FencedStateEpochError,
    InMemoryShareStateStore,
    ShareStateKey,
    ShareStateRejected,
    ShareStateStore,
    ShareStateWrite,
    TopicIdPartition,
)
from mirrorsim.broker.metadata.share_state_store import pack_batches, unpack_batches

TOPIC = uuid.UUID(int=1)


class CountingStore(InMemoryShareStateStore):
    """Counts the batch calls, each of which a real store runs as one transaction."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.calls: list[int] = []
        self.fail = fail

    async def write_many(self, writes: Sequence[ShareStateWrite]) -> None:
        await asyncio.sleep(0)  # a real write yields to the loop while the thread works
        if self.fail:
            raise OSError("disk full")
        self.calls.append(len(writes))
        await super().write_many(writes)

    async def take_over_many(
        self, take_overs: Sequence[tuple[ShareStateKey, int]]
    ) -> list[ShareSnapshot | None]:
        await asyncio.sleep(0)
        self.calls.append(len(take_overs))
        return await super().take_over_many(take_overs)


def _snapshot(start: int, state_epoch: int = 0) -> ShareSnapshot:
    return ShareSnapshot(
        start, (StateBatch(start, start + 1, 1, RecordState.ARCHIVED),), state_epoch
    )


def test_every_store_is_a_share_state_store() -> None:
    assert isinstance(InMemoryShareStateStore(), ShareStateStore)
    assert isinstance(BatchedShareStateStore(InMemoryShareStateStore()), ShareStateStore)


async def test_the_in_memory_store_fences_as_the_database_does() -> None:
    store = InMemoryShareStateStore()
    assert await store.initialize("g", TOPIC, 0, _snapshot(1))
    assert not await store.initialize("g", TOPIC, 0, _snapshot(2))
    await store.write("g", TOPIC, 0, _snapshot(3, state_epoch=2), leader_epoch=4)
    with pytest.raises(FencedStateEpochError):
        await store.write("g", TOPIC, 0, _snapshot(4, state_epoch=1), leader_epoch=4)
    with pytest.raises(FencedLeaderEpochError):
        await store.write("g", TOPIC, 0, _snapshot(4, state_epoch=2), leader_epoch=3)
    assert await store.take_over("g", TOPIC, 0, 5) == _snapshot(3, state_epoch=5)
    with pytest.raises(FencedStateEpochError):
        await store.take_over("g", TOPIC, 0, 4)
    await store.write("g", TOPIC, 1, _snapshot(9))
    await store.write("h", TOPIC, 0, _snapshot(9))
    assert await store.read_group("g") == {
        TopicIdPartition(TOPIC, 0): _snapshot(3, state_epoch=5),
        TopicIdPartition(TOPIC, 1): _snapshot(9),
    }
    await store.delete_group("g")
    assert await store.read_group("g") == {}
    await store.delete_topic(TOPIC)
    assert await store.read("h", TOPIC, 0) is None


calls_strategy = st.lists(
    st.tuples(
        st.sampled_from(["a", "b"]),  # group
        st.integers(0, 1),  # partition
        st.integers(0, 3),  # state epoch
        st.integers(-1, 3),  # leader epoch of a write
    ),
    min_size=1,
    max_size=30,
)
Call = tuple[str, int, int, int]


async def _outcome(pending: Awaitable[object]) -> object:
    try:
        return await pending
    except ShareStateRejected as rejected:
        return type(rejected)


def _write(store: ShareStateStore, n: int, call: Call) -> Awaitable[None]:
    group, partition, state_epoch, leader_epoch = call
    return store.write(
        group, TOPIC, partition, _snapshot(n, state_epoch), leader_epoch=leader_epoch
    )


def _take_over(store: ShareStateStore, _n: int, call: Call) -> Awaitable[ShareSnapshot | None]:
    group, partition, state_epoch, _ = call
    return store.take_over(group, TOPIC, partition, state_epoch)


@pytest.mark.parametrize("make", [_write, _take_over], ids=["writes", "take-overs"])
@given(calls=calls_strategy, before=calls_strategy)
def test_concurrent_calls_end_as_if_made_one_at_a_time(
    make: Callable[[ShareStateStore, int, Call], Awaitable[object]],
    calls: list[Call],
    before: list[Call],
) -> None:
    """Concurrent writes (or take-overs) over the rows ``before`` left: whatever is
    refused among them, each caller gets the outcome it would have got alone, in the
    order the calls were made, and the rows end the same."""

    async def scenario() -> None:
        alone, inner = InMemoryShareStateStore(), CountingStore()
        for store in (alone, inner):
            for n, call in enumerate(before):
                await _outcome(_write(store, n, call))
        expected = [await _outcome(make(alone, n, call)) for n, call in enumerate(calls)]
        batched = BatchedShareStateStore(inner)
        got = await asyncio.gather(
            *(_outcome(make(batched, n, call)) for n, call in enumerate(calls))
        )
        assert got == expected
        for group in ("a", "b"):
            assert await inner.read_group(group) == await alone.read_group(group)

    asyncio.run(scenario())


async def test_a_failed_write_fails_every_write_in_it_and_later_ones_still_write() -> None:
    inner = CountingStore(fail=True)
    store = BatchedShareStateStore(inner)
    results = await asyncio.gather(
        *(store.write(f"g{n}", TOPIC, 0, _snapshot(n)) for n in range(5)),
        return_exceptions=True,
    )
    assert all(isinstance(r, OSError) for r in results)
    inner.fail = False
    await store.write("g0", TOPIC, 0, _snapshot(7))
    assert await store.read("g0", TOPIC, 0) == _snapshot(7)


async def test_concurrent_writes_share_one_batch_call() -> None:
    inner = CountingStore()
    store = BatchedShareStateStore(inner)
    await asyncio.gather(*(store.write(f"g{n}", TOPIC, 0, _snapshot(n)) for n in range(50)))
    assert sum(inner.calls) == 50
    assert len(inner.calls) <= 2


batches_strategy = st.lists(
    st.builds(
        StateBatch,
        st.integers(-(2**63), 2**63 - 1),
        st.integers(-(2**63), 2**63 - 1),
        st.integers(-(2**15), 2**15 - 1),
        st.sampled_from(list(RecordState)),
    ),
    max_size=20,
)


@given(batches_strategy)
def test_state_batches_pack_into_nineteen_bytes_each_and_back(batches: list[StateBatch]) -> None:
    packed = pack_batches(batches)
    assert len(packed) == 1 + 19 * len(batches)
    assert unpack_batches(packed) == tuple(batches)


@pytest.mark.parametrize("packed", [b"", b"\x02" + bytes(19)])
def test_batches_of_an_unknown_format_are_refused(packed: bytes) -> None:
    with pytest.raises(ValueError, match="unknown format"):
        unpack_batches(packed)
