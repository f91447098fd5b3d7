"""KeyedBatcher: concurrent calls per key coalesce, in order, with per-batch outcomes."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mirrorsim.coordinator.batching import KeyedBatcher


class Recorder:
    def __init__(self, failing: set[str] | None = None) -> None:
        self.runs: list[tuple[str, list[int]]] = []
        self.failing = failing or set()
        self.release = asyncio.Event()
        self.release.set()

    async def run(self, key: str, items: list[int]) -> None:
        self.runs.append((key, items))
        await self.release.wait()
        if key in self.failing:
            raise ValueError(f"{key} refused")


async def test_calls_made_together_share_one_run_per_key() -> None:
    recorder = Recorder()
    batcher: KeyedBatcher[str, int] = KeyedBatcher(recorder.run)
    await asyncio.gather(*(batcher.submit("a" if i % 2 else "b", i) for i in range(100)))
    assert sorted(recorder.runs) == [
        ("a", list(range(1, 100, 2))),
        ("b", list(range(0, 100, 2))),
    ]


async def test_calls_made_while_a_batch_runs_form_the_next_batch() -> None:
    recorder = Recorder()
    recorder.release.clear()
    batcher: KeyedBatcher[str, int] = KeyedBatcher(recorder.run)
    first = asyncio.create_task(batcher.submit("a", 1))
    while not recorder.runs:
        await asyncio.sleep(0)
    later = [asyncio.create_task(batcher.submit("a", i)) for i in (2, 3, 4)]
    await asyncio.sleep(0)
    assert recorder.runs == [("a", [1])]
    recorder.release.set()
    await asyncio.gather(first, *later)
    assert recorder.runs == [("a", [1]), ("a", [2, 3, 4])]


async def test_a_failed_batch_fails_its_callers_only() -> None:
    recorder = Recorder(failing={"bad"})
    batcher: KeyedBatcher[str, int] = KeyedBatcher(recorder.run)
    outcomes = await asyncio.gather(
        batcher.submit("bad", 1),
        batcher.submit("good", 2),
        batcher.submit("bad", 3),
        return_exceptions=True,
    )
    assert [type(o) for o in outcomes] == [ValueError, type(None), ValueError]
    recorder.failing.clear()
    await batcher.submit("bad", 5)
    assert recorder.runs[-1] == ("bad", [5])


async def test_close_cancels_the_batch_in_flight() -> None:
    recorder = Recorder()
    recorder.release.clear()
    batcher: KeyedBatcher[str, int] = KeyedBatcher(recorder.run)
    caller = asyncio.create_task(batcher.submit("a", 1))
    while not recorder.runs:
        await asyncio.sleep(0)
    await batcher.close()
    with pytest.raises(asyncio.CancelledError):
        await caller


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("xyz"), st.integers(0, 3)), min_size=1, max_size=40))
def test_every_item_runs_once_in_submission_order_per_key(
    submissions: list[tuple[str, int]],
) -> None:
    """Submitters arrive after random numbers of loop turns; per key, the concatenated
    batches are exactly that key's submissions in order."""

    async def scenario() -> tuple[list[tuple[str, list[int]]], list[tuple[str, int]]]:
        recorder = Recorder()
        batcher: KeyedBatcher[str, int] = KeyedBatcher(recorder.run)
        called: list[tuple[str, int]] = []

        async def submit(index: int, key: str, delay: int) -> None:
            for _ in range(delay):
                await asyncio.sleep(0)
            called.append((key, index))
            await batcher.submit(key, index)

        tasks = []
        for index, (key, delay) in enumerate(submissions):
            tasks.append(asyncio.create_task(submit(index, key, delay)))
            await asyncio.sleep(0)
        await asyncio.gather(*tasks)
        return recorder.runs, called

    runs, called = asyncio.run(scenario())
    for key in "xyz":
        ran = [item for k, items in runs if k == key for item in items]
        assert ran == [index for k, index in called if k == key]
