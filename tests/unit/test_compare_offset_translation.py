"""MM2 offset translation: spec 003's worked tables, exact, and the 64-entry cache's invariants."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.compare.offset_sync import (
    GAP_PER_AGE,
    SYNCS_PER_PARTITION,
    UNTRANSLATABLE,
    OffsetSync,
    OffsetSyncCache,
    OffsetSyncEmitter,
    translate_downstream,
)
from mirrorsim.compare.timestamp_translation import offset_for_timestamp, translate_by_timestamp

# Spec 003, "after mirroring 1000000 records to a partition": the cached syncs [0]..[13],
# each upstream offset mapped 100000 lower downstream.
SPEC_CACHE = [
    OffsetSync(u, u - 100_000)
    for u in (
        1_000_000, 999_900, 999_700, 999_300, 998_500, 996_900, 993_700,
        987_300, 974_500, 948_900, 897_700, 795_300, 590_500, 180_900,
    )
]  # fmt: skip

# (source offset, actual target offset, translated target offset, re-read count)
SPEC_ROWS = [
    (1_000_000, 900_000, 900_000, 0),
    (999_999, 899_999, 899_901, 98),
    (999_890, 899_890, 899_701, 189),
    (999_650, 899_650, 899_301, 349),
    (999_200, 899_200, 898_501, 699),
    (998_400, 898_400, 896_901, 1499),
    (996_800, 896_800, 893_701, 3099),
    (993_600, 893_600, 887_301, 6299),
    (987_200, 887_200, 874_501, 12699),
    (974_400, 874_400, 848_901, 25499),
    (948_800, 848_800, 797_701, 51099),
    (897_600, 797_600, 695_301, 102299),
    (795_200, 695_200, 490_501, 204699),
    (590_400, 490_400, 80_901, 409499),
]


@pytest.mark.parametrize(("source", "actual", "translated", "re_read"), SPEC_ROWS)
def test_spec_003_offset_sync_table(
    source: int, actual: int, translated: int, re_read: int
) -> None:
    """Spec 003's table, row by row. Its 999999 row prints 99 re-read records, but its own
    columns give 899999 - 899901 = 98; every other row is actual minus translated too."""
    assert translate_downstream(SPEC_CACHE, source, upstream_log_end=1_000_001) == translated
    assert actual - translated == re_read


def test_spec_003_offset_not_mirrored_yet_is_untranslatable() -> None:
    assert translate_downstream(SPEC_CACHE, 1_000_100, upstream_log_end=1_000_001) == -1


def test_spec_003_cache_gaps_double_within_the_cache_invariant() -> None:
    """The spec's snapshot is a table the cache may hold: each gap within its allowance,
    and none of its entries could be dropped without exceeding it."""
    latest = SPEC_CACHE[0].upstream_offset
    gaps = [a.upstream_offset - b.upstream_offset for a, b in itertools.pairwise(SPEC_CACHE)]
    assert gaps == [100 * 2**i for i in range(13)]
    allowances = [max(100, GAP_PER_AGE * (latest - s.upstream_offset)) for s in SPEC_CACHE[:-1]]
    assert all(gap <= allowance for gap, allowance in zip(gaps, allowances, strict=True))
    merged = [gaps[k] + gaps[k + 1] for k in range(len(gaps) - 1)]
    assert all(m > allowance for m, allowance in zip(merged, allowances, strict=False))


def test_offset_older_than_every_sync_is_untranslatable() -> None:
    assert translate_downstream(SPEC_CACHE, 180_899) == UNTRANSLATABLE


# Spec 003's timestamp table; letters are timestamps that grow with the offset (P oldest).
LETTER_TS = {letter: 1_000 * (ord("Q") - ord(letter)) for letter in "ABEGIKLOP"}
TIMESTAMP_ROWS = [  # (source offset, timestamp letter, actual target, translated target)
    (1000, "B", 600, 600),
    (990, "E", 590, 580),
    (980, "E", 580, 580),
    (960, "G", 560, 560),
    (900, "I", 500, 500),
    (800, "K", 400, 400),
    (700, "L", 300, 300),
    (600, "O", 200, 200),
    (400, "P", 0, 0),
]


def _target_log() -> list[tuple[int, int]]:
    """The target's (offset, timestamp) pairs: source offset s landed at s - 400; records
    between the table's rows get distinct timestamps between their neighbours'."""
    rows = sorted((s - 400, LETTER_TS[letter]) for s, letter, _, _ in TIMESTAMP_ROWS)
    log: list[tuple[int, int]] = []
    for (offset, ts), (next_offset, next_ts) in itertools.pairwise(rows):
        step = 0 if ts == next_ts else (next_ts - ts) / (next_offset - offset)
        log += [(o, int(ts + step * (o - offset))) for o in range(offset, next_offset)]
    return [*log, rows[-1]]


@pytest.mark.parametrize(("source", "letter", "actual", "translated"), TIMESTAMP_ROWS)
def test_spec_003_timestamp_table(source: int, letter: str, actual: int, translated: int) -> None:
    target = offset_for_timestamp(_target_log(), LETTER_TS[letter])
    assert translate_by_timestamp(LETTER_TS[letter], target, None) == translated
    assert _target_log()[actual][0] == actual


def test_spec_003_timestamp_not_mirrored_yet_keeps_the_previous_offset() -> None:
    target = offset_for_timestamp(_target_log(), LETTER_TS["A"])
    assert target is None
    assert translate_by_timestamp(LETTER_TS["A"], target, 600) is None


def test_spec_003_timestamp_translation_never_moves_a_group_backwards() -> None:
    target = offset_for_timestamp(_target_log(), LETTER_TS["G"])
    assert target == 560
    assert translate_by_timestamp(LETTER_TS["G"], target, 600) is None


def test_emitter_publishes_every_offset_lag_max_and_on_jumps() -> None:
    emitter = OffsetSyncEmitter(100)
    emitted = [u for u in range(100, 400) if emitter.update(u, u - 100)]
    assert emitted == [100, 200, 300]
    assert emitter.update(450, 300) == OffsetSync(450, 300)
    assert emitter.update(451, 250) == OffsetSync(451, 250)


def _fill(granularity: int, steps: list[int]) -> tuple[OffsetSyncCache, list[OffsetSync]]:
    cache = OffsetSyncCache(granularity)
    upstream = 0
    history = []
    for step in steps:
        upstream += step
        history.append(OffsetSync(upstream, upstream // 2))
        cache.update(history[-1])
    return cache, history


STEPS = st.lists(st.one_of(st.integers(1, 500), st.integers(1, 2**54)), min_size=1, max_size=300)


@given(granularity=st.integers(1, 200), steps=STEPS)
def test_cache_invariants(granularity: int, steps: list[int]) -> None:
    """Latest first, strictly older after it, the earliest sync last, at most 64 entries,
    nothing dropped before the table is full, and every gap that hides a received sync
    at most ``max(g, 3 * age of its newer end)``."""
    cache, history = _fill(granularity, steps)
    syncs = cache.syncs
    latest = history[-1].upstream_offset
    assert syncs[0] == history[-1] and syncs[-1] == history[0]
    assert all(a.upstream_offset > b.upstream_offset for a, b in itertools.pairwise(syncs))
    assert set(syncs) <= set(history)
    assert len(syncs) == min(len(history), SYNCS_PER_PARTITION)
    received = {s.upstream_offset for s in history}
    for newer, older in itertools.pairwise(syncs):
        hidden = any(older.upstream_offset < u < newer.upstream_offset for u in received)
        allowance = max(granularity, GAP_PER_AGE * (latest - newer.upstream_offset))
        assert not hidden or newer.upstream_offset - older.upstream_offset <= allowance


@given(granularity=st.integers(1, 200), steps=STEPS)
def test_cache_translation_error_is_bounded_by_lag(granularity: int, steps: list[int]) -> None:
    """Every received sync ``lag`` behind the latest translates through a cached sync
    fewer than ``max(g, 3 * lag)`` offsets before it (the bound the invariant implies)."""
    cache, history = _fill(granularity, steps)
    latest = history[-1].upstream_offset
    for sync in history:
        lag = latest - sync.upstream_offset
        closest = max(
            s.upstream_offset for s in cache.syncs if s.upstream_offset <= sync.upstream_offset
        )
        assert sync.upstream_offset - closest < max(granularity, GAP_PER_AGE * lag)
        assert translate_downstream(cache.syncs, sync.upstream_offset) != UNTRANSLATABLE


def test_cache_regression_bursty_syncs_keep_recent_offsets_translatable() -> None:
    """The history that once emptied the cache's middle (one sync kept per distance
    bucket lost every sync between the first and the last few)."""
    steps = [1, 1, 1, 145, 500, 500, 500, 1, 1, 1, 1, 7, 13, 500, 500, 500, 22, 500, 500,
             11, 500, 84, 499, 499]  # fmt: skip
    cache, history = _fill(1, steps)
    assert cache.syncs == tuple(reversed(history))


def test_cache_restarts_when_upstream_offsets_go_backwards() -> None:
    cache = OffsetSyncCache(100)
    for u in (0, 100, 200):
        cache.update(OffsetSync(u, u))
    cache.update(OffsetSync(50, 7))
    assert cache.syncs == (OffsetSync(50, 7),)
