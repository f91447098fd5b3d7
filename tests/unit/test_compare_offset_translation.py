"""MM2 offset translation: spec 003's worked tables, exact, and Kafka's OffsetSyncStore."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.compare.offset_sync import (
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

# (source offset, actual target offset, index of the closest cached sync, translated target
# offset, re-read count)
SPEC_ROWS = [
    (1_000_000, 900_000, 0, 900_000, 0),
    (999_999, 899_999, 1, 899_901, 98),
    (999_890, 899_890, 2, 899_701, 189),
    (999_650, 899_650, 3, 899_301, 349),
    (999_200, 899_200, 4, 898_501, 699),
    (998_400, 898_400, 5, 896_901, 1499),
    (996_800, 896_800, 6, 893_701, 3099),
    (993_600, 893_600, 7, 887_301, 6299),
    (987_200, 887_200, 8, 874_501, 12699),
    (974_400, 874_400, 9, 848_901, 25499),
    (948_800, 848_800, 10, 797_701, 51099),
    (897_600, 797_600, 11, 695_301, 102299),
    (795_200, 695_200, 12, 490_501, 204699),
    (590_400, 490_400, 13, 80_901, 409499),
]
SPEC_LAST_SYNC_AT_START = 180_900
"""The spec's oldest entry: the latest sync in the offset-syncs topic when the checkpoint
task started (invariant D keeps it in slot 63)."""


def _feed(cache: OffsetSyncCache, first: int, last: int, step: int) -> None:
    for upstream in range(first, last + 1, step):
        cache.update(OffsetSync(upstream, upstream - 100_000))


def _spec_003_store() -> OffsetSyncCache:
    """Spec 003's scenario as Kafka runs it: MM2 copies source 100000.. to target 0.. with a
    sync every 100 offsets; the checkpoint task starts without its previous checkpoints
    (``OffsetSyncStore.start(true)``), reads the topic to the end while syncs up to
    180900 are in it, then follows the syncs live up to 1000000."""
    cache = OffsetSyncCache(initialization_must_read_to_end=True)
    _feed(cache, 100_000, SPEC_LAST_SYNC_AT_START, 100)
    cache.finish_initial_read()
    _feed(cache, SPEC_LAST_SYNC_AT_START + 100, 1_000_000, 100)
    return cache


def test_spec_003_snapshot_is_kafkas_store_after_a_start_that_read_to_the_end() -> None:
    assert _spec_003_store().syncs == tuple(SPEC_CACHE)


@pytest.mark.parametrize(("source", "actual", "index", "translated", "re_read"), SPEC_ROWS)
def test_spec_003_offset_sync_table(
    source: int, actual: int, index: int, translated: int, re_read: int
) -> None:
    """Spec 003's table, row by row, through the store. Its 999999 row prints 99 re-read
    records, but its own columns give 899999 - 899901 = 98; every other row is actual
    minus translated as printed."""
    syncs = _spec_003_store().syncs
    assert next(s for s in syncs if s.upstream_offset <= source) == syncs[index]
    assert syncs[index] == SPEC_CACHE[index]
    assert translate_downstream(syncs, source, upstream_log_end=1_000_001) == translated
    assert actual - translated == re_read


def test_spec_003_offset_not_mirrored_yet_is_untranslatable() -> None:
    syncs = _spec_003_store().syncs
    assert translate_downstream(syncs, 1_000_100, upstream_log_end=1_000_001) == -1


def test_spec_003_cache_gaps_double() -> None:
    gaps = [a.upstream_offset - b.upstream_offset for a, b in itertools.pairwise(SPEC_CACHE)]
    assert gaps == [100 * 2**i for i in range(13)]


def _store_after(first: int, last: int, step: int) -> OffsetSyncCache:
    cache = OffsetSyncCache()
    _feed(cache, first, last, step)
    return cache


# What the store holds when it took every sync of spec 003's scenario from the first one
# (a checkpoint task that loaded its checkpoints, ``start(false)``, or ran since the first
# sync): invariant D keeps sync 0, and the younger slots are spaced from it.
KAFKA_STORE_FROM_FIRST_SYNC = (
    1_000_000, 999_900, 999_800, 999_600, 999_200, 998_400, 995_200,
    992_000, 985_600, 972_800, 921_600, 819_200, 614_400, 409_600, 0,
)  # fmt: skip
KAFKA_ROWS_FROM_FIRST_SYNC = [  # (source offset, closest cached upstream, translated, re-read)
    (1_000_000, 1_000_000, 900_000, 0),
    (999_999, 999_900, 899_901, 98),
    (999_890, 999_800, 899_801, 89),
    (999_650, 999_600, 899_601, 49),
    (999_200, 999_200, 899_200, 0),
    (998_400, 998_400, 898_400, 0),
    (996_800, 995_200, 895_201, 1599),
    (993_600, 992_000, 892_001, 1599),
    (987_200, 985_600, 885_601, 1599),
    (974_400, 972_800, 872_801, 1599),
    (948_800, 921_600, 821_601, 27199),
    (897_600, 819_200, 719_201, 78399),
    (795_200, 614_400, 514_401, 180799),
    (590_400, 409_600, 309_601, 180799),
]


def test_spec_003_scenario_from_the_first_sync_differs_after_two_rows() -> None:
    """The table depends on where the store started: fed every sync from upstream 0, only
    rows 1000000 and 999999 come out as printed."""
    cache = _store_after(0, 1_000_000, 100)
    assert tuple(s.upstream_offset for s in cache.syncs) == KAFKA_STORE_FROM_FIRST_SYNC
    spec = {source: translated for source, _, _, translated, _ in SPEC_ROWS}
    for source, closest, translated, re_read in KAFKA_ROWS_FROM_FIRST_SYNC:
        at_or_before = [s for s in cache.syncs if s.upstream_offset <= source]
        assert at_or_before[0].upstream_offset == closest
        assert translate_downstream(cache.syncs, source, upstream_log_end=1_000_001) == translated
        assert source - 100_000 - translated == re_read
        assert (translated == spec[source]) == (source >= 999_999)


def test_kafkas_own_sparse_translation_example() -> None:
    """OffsetSyncStoreTest.testPastOffsetTranslation: syncs every 10 offsets from 0 to 1000
    read at a start that must read to the end, then 1010 to 10000 live."""
    cache = OffsetSyncCache(initialization_must_read_to_end=True)
    _feed(cache, 0, 1000, 10)
    assert [s.upstream_offset for s in cache.syncs] == [1000]
    cache.finish_initial_read()
    _feed(cache, 1010, 10_000, 10)
    assert [s.upstream_offset for s in cache.syncs] == [
        10_000, 9990, 9970, 9940, 9880, 9640, 9160, 8680, 6760, 4840, 1000
    ]  # fmt: skip


def test_kafkas_sparse_translation_example_without_read_to_end() -> None:
    """OffsetSyncStoreTest.testPastOffsetTranslationWithoutInitializationReadToEnd: the
    same syncs (1000 read twice) at a start that need not read to the end keep sync 0."""
    cache = OffsetSyncCache()
    _feed(cache, 0, 1000, 10)
    _feed(cache, 1000, 10_000, 10)
    assert [s.upstream_offset for s in cache.syncs] == [
        10_000, 9990, 9960, 9900, 9840, 9600, 9120, 8640, 7680, 3840, 0
    ]  # fmt: skip


def test_offset_older_than_every_sync_is_untranslatable() -> None:
    assert translate_downstream(_spec_003_store().syncs, 180_899) == UNTRANSLATABLE


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


def test_emitter_publishes_once_offset_lag_max_is_exceeded_and_on_jumps() -> None:
    """Kafka's OffsetSyncWriter: due once downstream - (last sync + 1) >= offset.lag.max,
    so every 101 records of a contiguous copy at the default 100."""
    emitter = OffsetSyncEmitter(100)
    emitted = [u for u in range(100, 400) if emitter.update(u, u - 100)]
    assert emitted == [100, 201, 302]
    assert emitter.update(450, 300) == OffsetSync(450, 300)
    assert emitter.update(451, 250) == OffsetSync(451, 250)


def test_emitter_promotes_the_held_back_sync_at_commit() -> None:
    emitter = OffsetSyncEmitter(100)
    for upstream in range(100, 160):
        emitter.update(upstream, upstream - 100)
    assert emitter.promote_delayed() == OffsetSync(159, 59)
    assert emitter.promote_delayed() is None
    assert [u for u in range(160, 202) if emitter.update(u, u - 100)] == [201]
    assert emitter.promote_delayed() is None


def _fill(steps: list[int]) -> tuple[OffsetSyncCache, list[OffsetSync]]:
    cache = OffsetSyncCache()
    upstream = 0
    history = []
    for step in steps:
        upstream += step
        history.append(OffsetSync(upstream, upstream // 2))
        cache.update(history[-1])
    return cache, history


STEPS = st.lists(st.one_of(st.integers(1, 500), st.integers(1, 2**54)), min_size=1, max_size=300)


@given(steps=STEPS)
def test_store_invariants(steps: list[int]) -> None:
    """Kafka's invariants for every pair of distinct slots: A (latest first), B (slot j
    at most ``2^j - 2^i`` older than slot i), C (at least ``2^max(i-2,0)`` apart) and D
    (the first sync last); strictly older syncs after newer ones; only received syncs."""
    cache, history = _fill(steps)
    slots = cache.slots
    assert len(slots) == SYNCS_PER_PARTITION
    assert slots[0] == history[-1] and slots[-1] == history[0]
    assert set(slots) <= set(history)
    for j in range(SYNCS_PER_PARTITION):
        for i in range(j):
            newer, older = slots[i].upstream_offset, slots[j].upstream_offset
            if slots[i] is slots[j]:
                continue
            assert newer > older
            assert newer >= older + 2 ** max(i - 2, 0)
            assert newer <= older + 2**j - 2**i


@given(steps=STEPS)
def test_every_received_sync_stays_translatable(steps: list[int]) -> None:
    """Slot 63 keeps the first sync, so no received offset ever becomes untranslatable."""
    cache, history = _fill(steps)
    for sync in history:
        assert translate_downstream(cache.syncs, sync.upstream_offset) != UNTRANSLATABLE


def test_store_restarts_when_upstream_offsets_go_backwards() -> None:
    cache = OffsetSyncCache()
    for u in (0, 100, 200):
        cache.update(OffsetSync(u, u))
    cache.update(OffsetSync(50, 7))
    assert cache.syncs == (OffsetSync(50, 7),)
