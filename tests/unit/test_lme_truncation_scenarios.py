"""The spec's convergence scenarios on real PartitionLogs, driven by the fetcher plan."""

from pathlib import Path

from helpers.lme_truncation import converge, entries

from mirrorsim.broker.log import AppendOrigin, LogConfig, PartitionLog
from mirrorsim.fetcher.plan import (
    EpochSupport,
    Fail,
    Fetch,
    FetchedPartition,
    FetchPhase,
    PartitionFetchState,
    QueryEpochEndOffset,
    QueryOffsetBounds,
    Truncate,
    TruncateFullyAndStartAt,
    next_action,
    on_epoch_end_offset,
    on_fetch_response,
    on_offset_bounds,
    on_truncated,
)
from mirrorsim.fetcher.truncation import (
    AppendMirrorPidReset,
    PersistLastMirroredEpoch,
    TruncateTo,
    epoch_end_offset,
    lme_truncation_offset,
    replication_truncation,
    stopping_plan,
    transaction_spans,
)
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.records import (
    ControlRecordType,
    RawBatch,
    Record,
    build_batch,
    build_control_batch,
    decode_control_batch,
    iter_batches,
)
from mirrorsim.protocol.records.control import TransactionMarker


def open_log(path: Path, **config: object) -> PartitionLog:
    return PartitionLog.open(path, LogConfig(**config), clock=lambda: 1.0)  # type: ignore[arg-type]


def record_batch(offset: int = 0, n: int = 1, *, pid: int = -1, txn: bool = False) -> RawBatch:
    return build_batch(
        [Record(offset + i, 1_000, b"k%d" % i, b"v") for i in range(n)],
        base_offset=offset,
        producer_id=pid,
        producer_epoch=0 if pid >= 0 else -1,
        base_sequence=0 if pid >= 0 else -1,
        is_transactional=txn,
    )


def batches_of(log: PartitionLog) -> list[RawBatch]:
    out: list[RawBatch] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        found = list(iter_batches(log.read(offset, 1 << 20).records))
        if not found:
            break
        out.extend(found)
        offset = found[-1].next_offset
    return out


def fetch_from(source: PartitionLog, action: Fetch) -> FetchedPartition:
    """What a READ_COMMITTED consumer fetch from ``source`` answers (diverging epoch v12+)."""
    source.update_high_watermark(source.log_end_offset)
    if action.offset < source.log_start_offset or action.offset > source.log_end_offset:
        return FetchedPartition(ErrorCode.OFFSET_OUT_OF_RANGE, -1, -1, -1)
    if action.last_fetched_epoch >= 0:
        epoch, end = source.end_offset_for_epoch(action.last_fetched_epoch)
        if epoch != action.last_fetched_epoch or end < action.offset:
            return FetchedPartition(
                ErrorCode.NONE,
                source.high_watermark,
                source.last_stable_offset,
                source.log_start_offset,
                diverging_epoch=(epoch, end),
            )
    lso = source.last_stable_offset
    records = b""
    if action.offset < lso:
        records = source.read(action.offset, 1 << 20, max_offset=lso).records
    return FetchedPartition(
        ErrorCode.NONE,
        source.high_watermark,
        lso,
        source.log_start_offset,
        batches=list(iter_batches(records)),
    )


def mirror(
    source: PartitionLog,
    dest: PartitionLog,
    *,
    support: EpochSupport = EpochSupport.DIVERGING_EPOCH,
    steps: int = 50,
) -> PartitionFetchState:
    """Execute the plan step by step until the destination has all the source offers."""
    state = PartitionFetchState.initial(
        log_end_offset=dest.log_end_offset,
        latest_epoch=dest.latest_epoch,
        current_leader_epoch=source.latest_epoch or 0,
        epoch_support=support,
    )
    for now in range(steps):
        action = next_action(state, now)
        if isinstance(action, Fail):
            return state
        if isinstance(action, Truncate | TruncateFullyAndStartAt):
            if isinstance(action, Truncate):
                dest.truncate_to(action.offset)
            else:
                dest.truncate_fully_and_start_at(action.offset)
            state = on_truncated(
                state, log_end_offset=dest.log_end_offset, latest_epoch=dest.latest_epoch
            )
        elif isinstance(action, QueryEpochEndOffset):
            epoch, end = source.end_offset_for_epoch(action.epoch)
            state = on_epoch_end_offset(
                state,
                error=ErrorCode.NONE,
                source_epoch=epoch,
                source_end_offset=end,
                epoch_entries=dest.epoch_cache.epoch_entries,
                log_end_offset=dest.log_end_offset,
                now_ms=now,
                backoff_ms=1,
            )
        elif isinstance(action, QueryOffsetBounds):
            state = on_offset_bounds(
                state,
                source_log_start_offset=source.log_start_offset,
                source_end_offset=source.log_end_offset,
            )
        elif isinstance(action, Fetch):
            outcome = on_fetch_response(
                state,
                fetch_from(source, action),
                epoch_entries=dest.epoch_cache.epoch_entries,
                log_end_offset=dest.log_end_offset,
                now_ms=now,
                backoff_ms=1,
            )
            if outcome.append:
                dest.append_as_follower(outcome.append, allow_gaps=True)
            if outcome.source_log_start_offset is not None:
                dest.update_high_watermark(dest.log_end_offset)
                dest.maybe_increment_log_start_offset(
                    min(outcome.source_log_start_offset, dest.high_watermark)
                )
            if not outcome.append and outcome.state == state:
                return state
            state = outcome.state
    raise AssertionError(f"no convergence in {steps} steps: {state}")


def stop(log: PartitionLog, *, leader_epoch: int) -> int:
    """Run the STOPPING plan on ``log``; returns the persisted LME."""
    log.update_high_watermark(log.log_end_offset)
    spans = transaction_spans(_txn_view(log))
    plan = stopping_plan(
        epoch_entries=log.epoch_cache.epoch_entries,
        log_end_offset=log.log_end_offset,
        last_stable_offset=log.last_stable_offset,
        transactions=spans,
        current_leader_epoch=leader_epoch,
        source_cluster_id="source-cluster",
    )
    for step in plan:
        if isinstance(step, TruncateTo):
            log.truncate_to(step.offset)
        elif isinstance(step, AppendMirrorPidReset):
            reset = build_control_batch(
                ControlRecordType.MIRROR_PID_RESET,
                producer_id=-1,
                producer_epoch=-1,
                timestamp=2_000,
                source_cluster_id=step.source_cluster_id,
            )
            log.append_as_leader(
                [reset], leader_epoch=step.leader_epoch, origin=AppendOrigin.COORDINATOR
            )
        elif isinstance(step, PersistLastMirroredEpoch):
            lme = step.epoch
    return lme


def _txn_view(log: PartitionLog) -> list[tuple[int, int, bool, bool, bool | None]]:
    view = []
    for b in batches_of(log):
        aborted = None
        if b.is_control:
            control = decode_control_batch(b)
            if isinstance(control, TransactionMarker):
                aborted = control.kind == ControlRecordType.ABORT
        view.append((b.base_offset, b.producer_id, b.is_transactional, b.is_control, aborted))
    return view


def test_scenario_a_first_mirror_truncates_everything_and_copies(tmp_path: Path) -> None:
    source, dest = open_log(tmp_path / "a"), open_log(tmp_path / "b")
    source.append_as_leader([record_batch(n=2)], leader_epoch=0)
    source.append_as_leader([record_batch(n=3)], leader_epoch=1)
    dest.append_as_leader([record_batch(n=4)], leader_epoch=5)
    cut = lme_truncation_offset(dest.epoch_cache.epoch_entries, -1, dest.log_end_offset)
    assert cut == 0
    dest.truncate_to(cut)
    assert dest.log_end_offset == 0
    mirror(source, dest)
    assert [b.data for b in batches_of(dest)] == [b.data for b in batches_of(source)]
    assert dest.epoch_cache.epoch_entries == source.epoch_cache.epoch_entries


def test_scenario_b_failback_truncates_the_new_record(tmp_path: Path) -> None:
    a, b = open_log(tmp_path / "a"), open_log(tmp_path / "b")
    a.append_as_leader([record_batch(n=2)], leader_epoch=0)
    a.append_as_leader([record_batch(n=2)], leader_epoch=1)
    mirror(a, b)
    assert b.log_end_offset == 4
    lme = stop(b, leader_epoch=0)
    assert lme == 1
    assert b.latest_epoch == 2
    a.append_as_leader([record_batch()], leader_epoch=2)  # A bumps to 2, new record at 4
    assert a.log_end_offset == 5
    cut = lme_truncation_offset(a.epoch_cache.epoch_entries, lme, a.log_end_offset)
    assert cut == 4
    a.truncate_to(cut)
    mirror(b, a)
    assert [x.data for x in batches_of(a)] == [x.data for x in batches_of(b)]
    assert a.log_end_offset == 5
    assert decode_control_batch(batches_of(a)[-1]).__class__.__name__ == "MirrorPidReset"


def test_uncommitted_suffix_within_the_lme_epoch_is_cut_by_diverging_epoch(
    tmp_path: Path,
) -> None:
    """B mirrored 0-3 of epoch 1; A kept writing epoch 1 (4-5) before failover."""
    a, b = open_log(tmp_path / "a"), open_log(tmp_path / "b")
    a.append_as_leader([record_batch(n=4)], leader_epoch=1)
    mirror(a, b)
    a.append_as_leader([record_batch(n=2)], leader_epoch=1)
    lme = stop(b, leader_epoch=1)
    b.append_as_leader([record_batch()], leader_epoch=2)
    a.truncate_to(lme_truncation_offset(a.epoch_cache.epoch_entries, lme, a.log_end_offset))
    assert a.log_end_offset == 6  # LME truncation alone cannot see the divergence
    for support in (EpochSupport.DIVERGING_EPOCH, EpochSupport.OFFSET_FOR_LEADER_EPOCH):
        copy = open_log(tmp_path / support.name)
        copy.append_as_follower(batches_of(a))
        mirror(b, copy, support=support)
        assert [x.data for x in batches_of(copy)] == [x.data for x in batches_of(b)]


def test_ule_before_mirroring_is_resolved_by_lme_truncation() -> None:
    # 1) B mirrors A ([e1, e1, e1]). 2) ULE on A: the new leader kept only offset 0 and
    # appended three records in epoch 2. 3) Failover to B (LME 1, epoch bumped to 2,
    # one new record); A fails back and mirrors B.
    b = [1, 1, 1, 2]
    a_after_ule = [1, 2, 2, 2]
    converged = converge(a_after_ule, b, lme=1)
    assert converged == [1]
    assert converged == b[: len(converged)]


def test_ule_after_lme_truncation_is_undetectable_without_the_config() -> None:
    # R1 and B hold [e1, e1, e1]; out-of-sync R2 won ULE #1 and wrote epoch 2 at 1-3.
    # ULE #2 brought R1 back; failover to B (bumps to 2, writes offset 3); A (R1) mirrors
    # B and truncates only R1 (the ISR). ULE #3 makes R2 the leader again.
    b = [1, 1, 1, 2]
    r2 = [1, 2, 2, 2]
    requested = r2[-1]
    src_epoch, src_end = epoch_end_offset(entries(b), requested, len(b))
    cut = replication_truncation(
        local_end_for_epoch=epoch_end_offset(entries(r2), src_epoch, len(r2)),
        requested_epoch=requested,
        source_epoch=src_epoch,
        source_end_offset=src_end,
        log_end_offset=len(r2),
    )
    assert (cut.offset, cut.complete) == (4, True)  # nothing to cut: divergence unseen
    assert r2 != b
    # With mirror.support.unclean.leader.election every replica, R2 included, takes the
    # LME truncation, after which the replication protocol converges.
    assert converge(r2, b, lme=1) == [1]


def test_transactional_stop_keeps_the_committed_prefix(tmp_path: Path) -> None:
    source, dest = open_log(tmp_path / "a"), open_log(tmp_path / "b")
    source.append_as_leader([record_batch(0, 1, pid=4001, txn=True)], leader_epoch=0)
    source.append_as_leader([_seq(record_batch(0, 1, pid=4001, txn=True), 1)], leader_epoch=0)
    source.append_as_leader([record_batch(0, 1, pid=4002, txn=True)], leader_epoch=0)
    for pid, kind in ((4001, ControlRecordType.COMMIT), (4002, ControlRecordType.ABORT)):
        marker = build_control_batch(kind, producer_id=pid, producer_epoch=0, timestamp=1_000)
        source.append_as_leader([marker], leader_epoch=0, origin=AppendOrigin.COORDINATOR)
    source.append_as_leader([record_batch()], leader_epoch=0)
    assert source.log_end_offset == 6
    dest.append_as_follower(batches_of(source)[:4])  # replication reached offset 4
    dest.update_high_watermark(dest.log_end_offset)
    assert dest.last_stable_offset == 2  # PID 4002's transaction is open
    stop(dest, leader_epoch=0)
    kept = batches_of(dest)
    assert [(x.base_offset, x.producer_id) for x in kept[:2]] == [(0, 4001), (1, 4001)]
    assert kept[2].is_control and kept[2].base_offset == 2  # MIRROR_PID_RESET
    dest.update_high_watermark(dest.log_end_offset)
    assert dest.last_stable_offset == dest.log_end_offset == 3


def _seq(batch: RawBatch, sequence: int) -> RawBatch:
    return build_batch(
        [Record(0, 1_000, b"k1", b"v")],
        producer_id=batch.producer_id,
        producer_epoch=0,
        base_sequence=sequence,
        is_transactional=True,
    )


def test_compaction_gaps_are_kept(tmp_path: Path) -> None:
    source, dest = open_log(tmp_path / "a"), open_log(tmp_path / "b")
    compacted = [
        build_batch([Record(o, 1_000, b"k%d" % o, b"v")], base_offset=o, partition_leader_epoch=0)
        for o in (0, 1, 5, 9)
    ]
    source.append_as_follower(compacted, allow_gaps=True)
    mirror(source, dest)
    assert [x.base_offset for x in batches_of(dest)] == [0, 1, 5, 9]
    assert dest.log_end_offset == 10


def test_retention_truncates_fully_and_starts_at_the_source_log_start(tmp_path: Path) -> None:
    source, dest = open_log(tmp_path / "a"), open_log(tmp_path / "b")
    source.truncate_fully_and_start_at(100)
    source.append_as_leader([record_batch(n=3)], leader_epoch=0)
    state = mirror(source, dest)
    assert state.phase is FetchPhase.FETCHING
    assert (dest.log_start_offset, dest.log_end_offset) == (100, 103)
