"""BatchedOffsetStore: concurrent commits share one write, each caller sees its own
offsets stored when it returns, and the last commit of a partition wins."""

from __future__ import annotations

import asyncio

from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.broker.group.batched_offset_store import BatchedOffsetStore, GroupCommits
from mirrorsim.broker.group.offset_store import (
    CommittedOffset,
    InMemoryOffsetStore,
    TopicPartition,
)


class CountingStore(InMemoryOffsetStore):
    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.writes: list[int] = []
        self.fail = fail

    async def commit_many(self, commits: GroupCommits) -> None:
        await asyncio.sleep(0)  # a real write yields to the loop while the thread works
        if self.fail:
            raise OSError("disk full")
        self.writes.append(len(commits))
        for group_id, offsets in commits:
            await self.commit(group_id, offsets)


commit_lists = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 2), st.integers(0, 1000)),
    min_size=1,
    max_size=40,
)


@given(commit_lists)
def test_concurrent_commits_are_stored_in_order_in_fewer_writes(
    commits: list[tuple[str, int, int]],
) -> None:
    async def scenario() -> None:
        inner = CountingStore()
        store = BatchedOffsetStore(inner)
        await asyncio.gather(
            *(
                store.commit(group, {TopicPartition("t", p): CommittedOffset(offset)})
                for group, p, offset in commits
            )
        )
        expected: dict[str, dict[TopicPartition, CommittedOffset]] = {}
        for group, p, offset in commits:
            expected.setdefault(group, {})[TopicPartition("t", p)] = CommittedOffset(offset)
        assert await store.load_all() == expected
        assert sum(inner.writes) == len(commits)
        assert len(inner.writes) <= 2  # the first commit alone, then everything queued

    asyncio.run(scenario())


async def test_a_failed_write_fails_every_commit_in_it_and_later_ones_still_write() -> None:
    inner = CountingStore(fail=True)
    store = BatchedOffsetStore(inner)
    results = await asyncio.gather(
        *(store.commit(g, {TopicPartition("t", 0): CommittedOffset(1)}) for g in "abc"),
        return_exceptions=True,
    )
    assert all(isinstance(r, OSError) for r in results)
    inner.fail = False
    await store.commit("a", {TopicPartition("t", 0): CommittedOffset(2)})
    assert await store.load_group("a") == {TopicPartition("t", 0): CommittedOffset(2)}


async def test_deletions_pass_through() -> None:
    store = BatchedOffsetStore(CountingStore())
    await store.commit("a", {TopicPartition("t", 0): CommittedOffset(1)})
    await store.delete_group("a")
    assert "a" not in await store.load_all()
