"""LME and replication-protocol truncation over modelled logs, and the STOPPING plan."""

import tempfile
from pathlib import Path

from helpers.lme_truncation import Log, converge, entries
from hypothesis import given, settings
from hypothesis import strategies as st

from mirrorsim.broker.log.epoch_cache import EpochEntry, LeaderEpochFileCache
from mirrorsim.fetcher.truncation import (
    AppendMirrorPidReset,
    BumpLeaderEpoch,
    MarkStopped,
    OffsetRange,
    PersistLastMirroredEpoch,
    RemoveFetchers,
    TruncateTo,
    TxnSpan,
    dropped_offsets,
    epoch_end_offset,
    lme_truncation_offset,
    replication_truncation,
    stop_truncation_offset,
    stopping_plan,
)

"""A modelled log: the leader epoch of each offset (offset = index)."""


def test_lme_minus_one_truncates_everything() -> None:
    assert lme_truncation_offset(entries([0, 0, 1, 1]), -1, 4) == 0


def test_lme_cuts_at_first_epoch_above_it() -> None:
    log = [0, 0, 1, 1, 3, 3, 4]
    assert lme_truncation_offset(entries(log), 1, len(log)) == 4
    assert lme_truncation_offset(entries(log), 2, len(log)) == 4
    assert lme_truncation_offset(entries(log), 3, len(log)) == 6
    assert lme_truncation_offset(entries(log), 9, len(log)) == len(log)


def test_replication_truncation_follows_kafkas_rule() -> None:
    local = [0, 0, 1, 1, 1, 1]
    cut = replication_truncation(
        local_end_for_epoch=epoch_end_offset(entries(local), 1, 6),
        requested_epoch=1,
        source_epoch=1,
        source_end_offset=4,
        log_end_offset=6,
    )
    assert (cut.offset, cut.complete) == (4, True)
    older = replication_truncation(
        local_end_for_epoch=epoch_end_offset(entries([0, 0, 2, 2]), 0, 4),
        requested_epoch=2,
        source_epoch=0,
        source_end_offset=3,
        log_end_offset=4,
    )
    assert (older.offset, older.complete) == (2, False)
    unknown = replication_truncation(
        local_end_for_epoch=(-1, -1),
        requested_epoch=2,
        source_epoch=-1,
        source_end_offset=-1,
        log_end_offset=4,
    )
    assert (unknown.offset, unknown.complete) == (0, True)


@given(
    st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30)), max_size=8),
    st.integers(-1, 35),
    st.integers(0, 40),
)
def test_epoch_end_offset_agrees_with_the_epoch_cache(
    raw: list[tuple[int, int]], epoch: int, extra: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cache = LeaderEpochFileCache(Path(tmp) / "leader-epoch-checkpoint")
        for e, start in raw:
            cache.assign(e, start)
        leo = max([x.start_offset for x in cache.epoch_entries], default=0) + extra
        assert epoch_end_offset(cache.epoch_entries, epoch, leo) == cache.end_offset_for(epoch, leo)


@st.composite
def divergent_histories(draw: st.DrawFn) -> tuple[Log, Log, int, int]:
    """A shared prefix, then each cluster's own clean-election epochs on top.

    The destination mirrored the shared prefix (epochs ≤ LME came from the source), then
    failed over and bumped above every mirrored epoch; the source kept going, possibly in
    the same epoch it was in and possibly bumping too (epoch numbers may collide, as in
    scenario B).
    """
    shared: Log = []
    epoch = 0
    for _ in range(draw(st.integers(0, 4))):
        epoch += draw(st.integers(0, 2))
        shared += [epoch] * draw(st.integers(1, 4))
    lme = shared[-1] if shared else -1
    source = list(shared)
    source_epoch = max(lme, 0)
    for _ in range(draw(st.integers(0, 3))):
        if draw(st.booleans()) or not source:
            source_epoch += draw(st.integers(0, 2))
        source += [source_epoch] * draw(st.integers(1, 3))
    destination = list(shared)
    dest_epoch = max([lme, *source], default=0) if draw(st.booleans()) else lme
    for _ in range(draw(st.integers(0, 3))):
        dest_epoch += draw(st.integers(1, 2))
        destination += [dest_epoch] * draw(st.integers(1, 3))
    return destination, source, lme, len(shared)


@settings(max_examples=300)
@given(divergent_histories())
def test_converged_destination_is_a_prefix_of_the_source(
    histories: tuple[Log, Log, int, int],
) -> None:
    destination, source, lme, shared = histories
    converged = converge(destination, source, lme)
    assert converged == source[: len(converged)]
    assert len(converged) == shared


def test_dropped_offsets_for_reports() -> None:
    assert dropped_offsets(0, 10, 4) == OffsetRange(4, 10)
    assert dropped_offsets(0, 10, 4).count == 6
    assert dropped_offsets(5, 10, 0) == OffsetRange(5, 10)
    assert dropped_offsets(0, 10, 12).count == 0


def test_stop_cut_lowers_below_straddling_aborted_transactions_only() -> None:
    committed = TxnSpan(4001, 0, 3, aborted=False)
    open_txn = TxnSpan(4002, 2, None, aborted=False)
    assert stop_truncation_offset(2, [committed, open_txn]) == 2
    aborted = TxnSpan(4001, 0, 3, aborted=True)
    assert stop_truncation_offset(2, [aborted, open_txn]) == 0
    chained = [TxnSpan(1, 5, 9, aborted=True), TxnSpan(2, 3, 7, aborted=True)]
    assert stop_truncation_offset(8, chained) == 3


def test_stopping_plan_order_and_values() -> None:
    plan = stopping_plan(
        epoch_entries=[EpochEntry(0, 0), EpochEntry(3, 10)],
        log_end_offset=20,
        last_stable_offset=15,
        transactions=[],
        current_leader_epoch=1,
        source_cluster_id="src",
    )
    assert plan == (
        RemoveFetchers(),
        TruncateTo(15),
        PersistLastMirroredEpoch(3),
        BumpLeaderEpoch(4),
        AppendMirrorPidReset(4, "src"),
        MarkStopped(),
    )
    emptied = stopping_plan(
        epoch_entries=[EpochEntry(2, 0)],
        log_end_offset=5,
        last_stable_offset=0,
        transactions=[],
        current_leader_epoch=7,
        source_cluster_id="src",
    )
    assert emptied[2] == PersistLastMirroredEpoch(-1)
    assert emptied[3] == BumpLeaderEpoch(8)
