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


@pytest.fixture(params=["in-memory", "batched"])
def store(request: pytest.FixtureRequest) -> ShareStateStore:
    inner = InMemoryShareStateStore()
    return inner if request.param == "in-memory" else BatchedShareStateStore(inner)


async def test_a_write_needs_a_stored_state_of_its_own_state_epoch(
    store: ShareStateStore,
) -> None:
    """Only initialize creates a state; a write replaces one, and only while the stored
    state epoch is the writer's, whether the writer's is older or newer."""
    with pytest.raises(FencedStateEpochError, match="no stored state"):
        await store.write("g", TOPIC, 0, _snapshot(1))
    assert await store.read("g", TOPIC, 0) is None
    assert await store.initialize("g", TOPIC, 0, _snapshot(1, state_epoch=2))
    assert not await store.initialize("g", TOPIC, 0, _snapshot(2))
    for other in (1, 3):
        with pytest.raises(FencedStateEpochError, match=f"state epoch {other} is not"):
            await store.write("g", TOPIC, 0, _snapshot(5, state_epoch=other))
    await store.write("g", TOPIC, 0, _snapshot(3, state_epoch=2), leader_epoch=4)
    with pytest.raises(FencedLeaderEpochError):
        await store.write("g", TOPIC, 0, _snapshot(4, state_epoch=2), leader_epoch=3)
    assert await store.read("g", TOPIC, 0) == _snapshot(3, state_epoch=2)


async def test_each_take_over_raises_the_state_epoch_by_one_and_fences_earlier_holders(
    store: ShareStateStore,
) -> None:
    assert await store.take_over("g", TOPIC, 0, 5) is None
    assert await store.read("g", TOPIC, 0) is None
    await store.initialize("g", TOPIC, 0, _snapshot(1))
    await store.write("g", TOPIC, 0, _snapshot(3), leader_epoch=4)
    first = await store.take_over("g", TOPIC, 0, 5)
    assert first == _snapshot(3, state_epoch=1)
    with pytest.raises(FencedStateEpochError):
        await store.write("g", TOPIC, 0, _snapshot(4), leader_epoch=5)
    second = await store.take_over("g", TOPIC, 0, 5)
    assert second == _snapshot(3, state_epoch=2)
    with pytest.raises(FencedStateEpochError):
        await store.write("g", TOPIC, 0, _snapshot(4, state_epoch=1), leader_epoch=5)
    await store.write("g", TOPIC, 0, _snapshot(4, state_epoch=2), leader_epoch=5)
    assert await store.read("g", TOPIC, 0) == _snapshot(4, state_epoch=2)


async def test_a_take_over_from_an_older_leader_epoch_is_refused(store: ShareStateStore) -> None:
    await store.initialize("g", TOPIC, 0, _snapshot(1))
    assert await store.take_over("g", TOPIC, 0, 6) == _snapshot(1, state_epoch=1)
    with pytest.raises(FencedLeaderEpochError):
        await store.take_over("g", TOPIC, 0, 5)
    # the refused take-over changed nothing: the holder of leader epoch 6 still writes
    await store.write("g", TOPIC, 0, _snapshot(2, state_epoch=1), leader_epoch=6)
    assert await store.read("g", TOPIC, 0) == _snapshot(2, state_epoch=1)


async def test_a_state_initialized_by_a_leader_cannot_be_taken_over_by_an_older_one(
    store: ShareStateStore,
) -> None:
    """The initializing leader has not written yet: its leader epoch is stored with the
    first state, so a broker that still thinks it leads an older epoch is refused."""
    assert await store.initialize("g", TOPIC, 0, _snapshot(3), leader_epoch=6)
    with pytest.raises(FencedLeaderEpochError):
        await store.take_over("g", TOPIC, 0, 5)
    await store.write("g", TOPIC, 0, _snapshot(4), leader_epoch=6)
    assert await store.read("g", TOPIC, 0) == _snapshot(4)


async def test_a_reset_starts_over_and_fences_the_holder(store: ShareStateStore) -> None:
    await store.initialize("g", TOPIC, 0, _snapshot(1))
    held = await store.take_over("g", TOPIC, 0, 3)
    assert held == _snapshot(1, state_epoch=1)
    await store.reset_start("g", TOPIC, 0, 100)
    assert await store.read("g", TOPIC, 0) == ShareSnapshot(100, (), 2)
    with pytest.raises(FencedStateEpochError):
        await store.write("g", TOPIC, 0, _snapshot(2, state_epoch=1), leader_epoch=3)
    # the reset keeps the leader epoch: the next load is fenced by it as before
    with pytest.raises(FencedLeaderEpochError):
        await store.take_over("g", TOPIC, 0, 2)
    assert await store.take_over("g", TOPIC, 0, 3) == ShareSnapshot(100, (), 3)
    # a partition without a state gets one, which a leader then takes over
    await store.reset_start("g", TOPIC, 1, 7)
    assert await store.read("g", TOPIC, 1) == ShareSnapshot(7, (), 0)
    assert not await store.initialize("g", TOPIC, 1, _snapshot(0))
    assert await store.take_over("g", TOPIC, 1, 0) == ShareSnapshot(7, (), 1)


async def test_deletions_forget_states_and_stale_holders_cannot_resurrect_them(
    store: ShareStateStore,
) -> None:
    other = uuid.UUID(int=2)
    for group, topic_id, partition in [
        ("g", TOPIC, 0),
        ("g", TOPIC, 1),
        ("g", other, 0),
        ("h", TOPIC, 0),
        ("h", other, 0),
    ]:
        await store.initialize(group, topic_id, partition, _snapshot(partition))
    await store.delete_group_topics("g", [TOPIC, uuid.UUID(int=99)])
    await store.delete_group_topics("g", [])
    assert await store.read_group("g") == {TopicIdPartition(other, 0): _snapshot(0)}
    assert await store.read_group("h") == {
        TopicIdPartition(TOPIC, 0): _snapshot(0),
        TopicIdPartition(other, 0): _snapshot(0),
    }
    with pytest.raises(FencedStateEpochError):
        await store.write("g", TOPIC, 1, _snapshot(1))
    await store.delete_group("g")
    assert await store.read_group("g") == {}
    with pytest.raises(FencedStateEpochError):
        await store.write("g", other, 0, _snapshot(0))
    assert await store.read_group("g") == {}
    await store.delete_topic(TOPIC)
    assert await store.read_group("h") == {TopicIdPartition(other, 0): _snapshot(0)}


call_strategy = st.tuples(
    st.sampled_from(["a", "b"]),  # group
    st.integers(0, 1),  # partition
    st.integers(0, 3),  # state epoch of a write
    st.integers(-1, 3),  # leader epoch of a write or take-over
)
calls_strategy = st.lists(call_strategy, min_size=1, max_size=30)
Call = tuple[str, int, int, int]
SETUPS = ("initialize", "take over", "write", "reset")
setup_strategy = st.lists(st.tuples(st.sampled_from(SETUPS), call_strategy), max_size=30)


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
    group, partition, _, leader_epoch = call
    return store.take_over(group, TOPIC, partition, leader_epoch)


async def _set_up(store: ShareStateStore, n: int, kind: str, call: Call) -> None:
    """One step of the rows a scenario starts from; refusals are part of the setup."""
    group, partition, state_epoch, _ = call
    if kind == "initialize":
        await store.initialize(group, TOPIC, partition, _snapshot(n, state_epoch))
    elif kind == "reset":
        await store.reset_start(group, TOPIC, partition, n)
    else:
        await _outcome((_take_over if kind == "take over" else _write)(store, n, call))


@pytest.mark.parametrize("make", [_write, _take_over], ids=["writes", "take-overs"])
@given(calls=calls_strategy, before=setup_strategy)
def test_concurrent_calls_end_as_if_made_one_at_a_time(
    make: Callable[[ShareStateStore, int, Call], Awaitable[object]],
    calls: list[Call],
    before: list[tuple[str, Call]],
) -> None:
    """Concurrent writes (or take-overs) over the rows ``before`` left: whatever is
    refused among them, each caller gets the outcome it would have got alone, in the
    order the calls were made, and the rows end the same."""

    async def scenario() -> None:
        alone, inner = InMemoryShareStateStore(), CountingStore()
        for store in (alone, inner):
            for n, (kind, call) in enumerate(before):
                await _set_up(store, n, kind, call)
        expected = [await _outcome(make(alone, n, call)) for n, call in enumerate(calls)]
        batched = BatchedShareStateStore(inner)
        got = await asyncio.gather(
            *(_outcome(make(batched, n, call)) for n, call in enumerate(calls))
        )
        assert got == expected
        for group in ("a", "b"):
            assert await inner.read_group(group) == await alone.read_group(group)

    asyncio.run(scenario())


async def test_concurrent_take_overs_get_distinct_epochs_and_only_the_last_taker_writes() -> None:
    """Loads of one partition that overlap (a leader move racing a reload) share batch
    calls, in which each take-over raises the epoch the one before it left: every taker
    but the last is fenced as if they had come one at a time."""
    inner = CountingStore()
    store = BatchedShareStateStore(inner)
    await store.initialize("g", TOPIC, 0, _snapshot(1))
    taken = await asyncio.gather(*(store.take_over("g", TOPIC, 0, 2) for _ in range(5)))
    epochs = [-1 if s is None else s.state_epoch for s in taken]
    assert epochs == [1, 2, 3, 4, 5]
    assert len(inner.calls) <= 2
    outcomes = await asyncio.gather(
        *(store.write("g", TOPIC, 0, _snapshot(9, e), leader_epoch=2) for e in epochs),
        return_exceptions=True,
    )
    assert [type(o) for o in outcomes] == [FencedStateEpochError] * 4 + [type(None)]
    assert await store.read("g", TOPIC, 0) == _snapshot(9, state_epoch=5)


async def test_a_failed_write_fails_every_write_in_it_and_later_ones_still_write() -> None:
    inner = CountingStore(fail=True)
    store = BatchedShareStateStore(inner)
    for n in range(5):
        await store.initialize(f"g{n}", TOPIC, 0, _snapshot(0))
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
    for n in range(50):
        await store.initialize(f"g{n}", TOPIC, 0, _snapshot(0))
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
