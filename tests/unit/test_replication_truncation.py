"""Follower truncation against a leader, as a model: whatever the two histories, the
fetch/diverging-epoch loop leaves the follower with a prefix of the leader's log that
keeps the whole common history."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.broker.log.epoch_cache import EpochEntry, LeaderEpochFileCache
from mirrorsim.broker.replica.follower_fetcher import (
    batches_within_epoch,
    fetcher_index,
    truncation_offset,
)
from mirrorsim.protocol.records import Record, build_batch


def epoch_cache(directory: Path, name: str, epochs: list[int]) -> LeaderEpochFileCache:
    entries: list[EpochEntry] = []
    for offset, epoch in enumerate(epochs):
        if not entries or entries[-1].epoch != epoch:
            entries.append(EpochEntry(epoch, offset))
    return LeaderEpochFileCache(directory / name, entries)


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[int], list[int], list[int]]:
    """(common prefix, leader suffix, follower suffix) as one epoch per offset.

    An epoch has one leader, so after the common prefix the two suffixes use disjoint
    new epochs; at most one of them may continue the prefix's last epoch. The leader is
    in a newer epoch than both (it assigned it at its log end on election, as Kafka).
    """
    prefix = sorted(draw(st.lists(st.integers(0, 5), max_size=8)))
    base = prefix[-1] if prefix else 0
    new_epochs = draw(st.lists(st.integers(base + 1, base + 12), unique=True, max_size=6))
    split = draw(st.integers(0, len(new_epochs)))
    leader_epochs, follower_epochs = new_epochs[:split], new_epochs[split:]
    continues = draw(st.sampled_from(["leader", "follower", "neither"])) if prefix else "neither"

    def suffix(epochs: list[int], may_continue: bool) -> list[int]:
        pool = sorted(epochs + ([base] if may_continue else []))
        return [e for e in pool for _ in range(draw(st.integers(1, 3)))]

    return (
        prefix,
        suffix(leader_epochs, continues == "leader"),
        suffix(follower_epochs, continues == "follower"),
    )


@given(histories())
def test_diverging_epoch_loop_converges_on_the_common_history(
    history: tuple[list[int], list[int], list[int]],
) -> None:
    prefix, leader_suffix, follower_suffix = history
    leader = prefix + leader_suffix
    follower = prefix + follower_suffix
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        leader_cache = epoch_cache(directory, "leader", leader)
        current_epoch = max(leader + follower, default=0) + 1
        leader_cache.assign(current_epoch, len(leader))
        follower_cache = epoch_cache(directory, "follower", follower)
        for _ in range(len(follower) + 2):
            if not follower:
                break
            last_epoch = follower[-1]
            epoch, end = leader_cache.end_offset_for(last_epoch, len(leader))
            if epoch == last_epoch and end >= len(follower):
                break
            offset, _ = truncation_offset(
                epoch,
                end,
                follower_cache.end_offset_for(epoch, len(follower)),
                len(follower),
                high_watermark=0,
            )
            assert offset < len(follower), "every divergence answer makes progress"
            del follower[offset:]
            follower_cache.truncate_from_end(offset)
        else:
            raise AssertionError("truncation did not converge")
    assert follower == leader[: len(follower)]
    assert len(follower) >= len(prefix)


def test_unknown_leader_epoch_truncates_to_the_high_watermark() -> None:
    assert truncation_offset(-1, -1, (3, 40), 50, 35) == (35, True)


def test_leader_epoch_unknown_to_the_follower_truncates_and_asks_again() -> None:
    assert truncation_offset(4, 30, (3, 25), 50, 0) == (25, False)
    assert truncation_offset(3, 30, (3, 50), 50, 0) == (30, True)


def test_batches_from_a_newer_epoch_than_the_request_are_not_appended() -> None:
    batches = [
        build_batch([Record(i, 1, None, b"x")], base_offset=i, partition_leader_epoch=e)
        for i, e in enumerate([1, 2, 3, 2])
    ]
    assert [b.partition_leader_epoch for b in batches_within_epoch(batches, 2)] == [1, 2]
    assert batches_within_epoch(batches, -1) == batches


@given(st.text(min_size=1), st.integers(0, 1000), st.integers(1, 8))
def test_fetcher_index_is_stable_and_in_range(topic: str, partition: int, fetchers: int) -> None:
    index = fetcher_index(topic, partition, fetchers)
    assert 0 <= index < fetchers
    assert index == fetcher_index(topic, partition, fetchers)
