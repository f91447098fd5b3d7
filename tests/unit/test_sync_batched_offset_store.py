"""BatchedOffsetStore: concurrent commits share one write, each caller sees its own
offsets stored when it returns, and the last commit of a partition wins; concurrent group
loads share one read and each caller gets its own group."""

from __future__ import annotations

import asyncio

from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.broker.group.batched_offset_store import (
    BatchedOffsetStore,
    GroupCommits,
    GroupOffsets,
)
from mirrorsim.broker.group.offset_store import (
    CommittedOffset,
    InMemoryOffsetStore,
    TopicPartition,
)


class CountingStore(InMemoryOffsetStore):
    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.writes: list[int] = []
        self.reads: list[int] = []
        self.fail = fail

    async def commit_many(self, commits: GroupCommits) -> None:
        await asyncio.sleep(0)  # a real write yields to the loop while the thread works
        if self.fail:
            raise OSError("disk full")
        self.writes.append(len(commits))
        for group_id, offsets in commits:
            await self.commit(group_id, offsets)

    async def load_groups(self, group_ids: list[str]) -> dict[str, GroupOffsets]:
        await asyncio.sleep(0)
        if self.fail:
            raise OSError("disk gone")
        self.reads.append(len(group_ids))
        return await super().load_groups(group_ids)


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


@given(
    committed=st.dictionaries(st.sampled_from("abcd"), st.integers(0, 1000)),
    loaded=st.lists(st.sampled_from("abcdef"), min_size=1, max_size=30),
)
def test_concurrent_group_loads_share_one_read_and_each_gets_its_group(
    committed: dict[str, int], loaded: list[str]
) -> None:
    async def scenario() -> None:
        inner = CountingStore()
        for group, offset in committed.items():
            await inner.commit(group, {TopicPartition("t", 0): CommittedOffset(offset)})
        store = BatchedOffsetStore(inner)
        results = await asyncio.gather(*(store.load_group(g) for g in loaded))
        for group, result in zip(loaded, results, strict=True):
            expected = (
                {TopicPartition("t", 0): CommittedOffset(committed[group])}
                if group in committed
                else {}
            )
            assert result == expected
        assert len(inner.reads) <= 2  # the first load alone, then everything queued
        assert sum(inner.reads) <= len(set(loaded)) + 1

    asyncio.run(scenario())


async def test_a_failed_load_fails_every_load_in_it_and_later_ones_still_read() -> None:
    inner = CountingStore(fail=True)
    store = BatchedOffsetStore(inner)
    results = await asyncio.gather(*(store.load_group(g) for g in "abc"), return_exceptions=True)
    assert all(isinstance(r, OSError) for r in results)
    inner.fail = False
    await store.commit("a", {TopicPartition("t", 0): CommittedOffset(2)})
    assert await store.load_group("a") == {TopicPartition("t", 0): CommittedOffset(2)}
