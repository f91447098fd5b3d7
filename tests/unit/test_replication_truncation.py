"""Truncation against a leader, as a model, under both fetchers' rules: whatever the two
histories, the plan's diverging-epoch loop (Fetch v12+) and its OffsetForLeaderEpoch loop
(older leaders) leave the local log with a prefix of the leader's log that keeps the whole
common history. Followers and mirror fetchers run the same plan; only its rules differ."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.broker.log.epoch_cache import EpochEntry, LeaderEpochFileCache
from mirrorsim.fetcher.plan import (
    FOLLOWER_RULES,
    MIRROR_RULES,
    EpochSupport,
    Fetch,
    FetchedPartition,
    FetchRules,
    PartitionFetchState,
    QueryEpochEndOffset,
    Truncate,
    fetcher_index,
    next_action,
    on_epoch_end_offset,
    on_fetch_response,
    on_truncated,
)
from mirrorsim.protocol.errors import ErrorCode

RULES = pytest.mark.parametrize("rules", [FOLLOWER_RULES, MIRROR_RULES], ids=lambda r: r.name)


def epoch_cache(directory: Path, name: str, epochs: list[int]) -> LeaderEpochFileCache:
    entries: list[EpochEntry] = []
    for offset, epoch in enumerate(epochs):
        if not entries or entries[-1].epoch != epoch:
            entries.append(EpochEntry(epoch, offset))
    return LeaderEpochFileCache(directory / name, entries)


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[int], list[int], list[int], int]:
    """(common prefix, leader suffix, follower suffix, high watermark), one epoch per offset.

    An epoch has one leader, so after the common prefix the two suffixes use disjoint
    new epochs; at most one of them may continue the prefix's last epoch. The leader is
    in a newer epoch than both (it assigned it at its log end on election, as Kafka). The
    high watermark lies within the common prefix: only what both logs hold was
    acknowledged.
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
        draw(st.integers(0, len(prefix))),
    )


def converge(
    history: tuple[list[int], list[int], list[int], int],
    rules: FetchRules,
    support: EpochSupport,
) -> tuple[list[int], list[int]]:
    """Run the plan against the leader until it fetches; (leader, follower) logs."""
    prefix, leader_suffix, follower_suffix, high_watermark = history
    leader = prefix + leader_suffix
    follower = prefix + follower_suffix
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        leader_cache = epoch_cache(directory, "leader", leader)
        current_epoch = max(leader + follower, default=0) + 1
        leader_cache.assign(current_epoch, len(leader))
        follower_cache = epoch_cache(directory, "follower", follower)
        state = PartitionFetchState.initial(
            log_end_offset=len(follower),
            latest_epoch=follower[-1] if follower else None,
            current_leader_epoch=current_epoch,
            epoch_support=support,
            rules=rules,
        )
        for _ in range(2 * len(follower) + 4):
            action = next_action(state, 0)
            if isinstance(action, Truncate):
                assert action.offset < len(follower), "every cut makes progress"
                assert action.offset >= high_watermark, "no acknowledged record is cut"
                del follower[action.offset :]
                follower_cache.truncate_from_end(action.offset)
                state = on_truncated(
                    state, log_end_offset=len(follower), latest_epoch=follower_cache.latest_epoch
                )
            elif isinstance(action, QueryEpochEndOffset):
                epoch, end = leader_cache.end_offset_for(action.epoch, len(leader))
                state = on_epoch_end_offset(
                    state,
                    error=ErrorCode.NONE,
                    source_epoch=epoch,
                    source_end_offset=end,
                    epoch_entries=follower_cache.epoch_entries,
                    log_end_offset=len(follower),
                    now_ms=0,
                    backoff_ms=0,
                    high_watermark=high_watermark,
                )
            elif isinstance(action, Fetch):
                diverging = None
                if action.last_fetched_epoch >= 0:
                    epoch, end = leader_cache.end_offset_for(action.last_fetched_epoch, len(leader))
                    if end < action.offset or epoch < action.last_fetched_epoch:
                        diverging = (epoch, end)
                if diverging is None:
                    break
                answer = FetchedPartition(
                    ErrorCode.NONE, len(leader), len(leader), 0, diverging_epoch=diverging
                )
                state = on_fetch_response(
                    state,
                    answer,
                    epoch_entries=follower_cache.epoch_entries,
                    log_end_offset=len(follower),
                    now_ms=0,
                    backoff_ms=0,
                    high_watermark=high_watermark,
                ).state
            else:
                raise AssertionError(f"unexpected action {action}")
        else:
            raise AssertionError("truncation did not converge")
    return leader, follower


@RULES
@pytest.mark.parametrize(
    "support",
    [EpochSupport.DIVERGING_EPOCH, EpochSupport.OFFSET_FOR_LEADER_EPOCH],
    ids=["diverging-epoch", "offset-for-leader-epoch"],
)
@given(history=histories())
def test_truncation_converges_on_the_common_history(
    history: tuple[list[int], list[int], list[int], int],
    rules: FetchRules,
    support: EpochSupport,
) -> None:
    leader, follower = converge(history, rules, support)
    assert follower == leader[: len(follower)]
    assert len(follower) >= len(history[0])


def _unknown_epoch_cut(rules: FetchRules) -> int:
    """A leader that places nothing of the follower's latest epoch (-1, -1)."""
    state = PartitionFetchState.initial(
        log_end_offset=50,
        latest_epoch=3,
        current_leader_epoch=4,
        epoch_support=EpochSupport.OFFSET_FOR_LEADER_EPOCH,
        rules=rules,
    )
    state = on_epoch_end_offset(
        state,
        error=ErrorCode.NONE,
        source_epoch=-1,
        source_end_offset=-1,
        epoch_entries=[EpochEntry(3, 10)],
        log_end_offset=50,
        now_ms=0,
        backoff_ms=0,
        high_watermark=35,
    )
    action = next_action(state, 0)
    assert isinstance(action, Truncate)
    return action.offset


def test_an_unknown_leader_epoch_cuts_a_follower_to_its_high_watermark() -> None:
    assert _unknown_epoch_cut(FOLLOWER_RULES) == 35


def test_an_unknown_source_epoch_cuts_a_mirror_to_nothing() -> None:
    assert _unknown_epoch_cut(MIRROR_RULES) == 0


@given(st.text(min_size=1), st.integers(0, 1000), st.integers(1, 8))
def test_fetcher_index_is_stable_and_in_range(topic: str, partition: int, fetchers: int) -> None:
    index = fetcher_index(topic, partition, fetchers)
    assert 0 <= index < fetchers
    assert index == fetcher_index(topic, partition, fetchers)
