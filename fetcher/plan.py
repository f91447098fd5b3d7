"""The mirror fetcher as a plan plus a step, per partition and without I/O.

A fetcher task loops: ``action = next_action(state, now_ms)``, executes it against the
source (Fetch, OffsetForLeaderEpoch, ListOffsets) or the local log (truncate, append), and
feeds the result back through one of the ``on_*`` functions, which return the next state.
This is Kafka's ``AbstractFetcherThread.doWork()`` (maybe truncate, then fetch) with the
per-partition ``Truncating``/``Fetching`` states made explicit, and a partition that
fails goes to FAILED alone: the task keeps serving the others.

Decisions (see docs/mirroring.md):

- Fetches are *consumer* fetches with ``isolation_level=READ_COMMITTED``: the source caps
  the answer at its LSO, which is what the spec means by "fetch up to the LSO". Batches
  of aborted transactions and the markers themselves are below the LSO, so they arrive
  and are appended byte for byte; the aborted-transaction list of the response is for
  consumers and is ignored. A batch ending at or beyond the LSO is never appended.
- Sources answering Fetch v12+ report divergence in the fetch response (diverging
  epoch); older ones (2.1+) are asked OffsetForLeaderEpoch first; a source with neither
  is trusted up to the local log end offset: every mirrored batch was below the
  source's LSO (so committed there) when it was copied, and without an LME query such a
  source always yields LME -1, so the local log was emptied before mirroring began.
- A batch whose leader epoch exceeds the fetch's current leader epoch (KAFKA-18723) or
  whose CRC fails makes the partition FAILED; nothing of that response is appended.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, replace

from mirrorsim.broker.log.epoch_cache import EpochEntry
from mirrorsim.fetcher.truncation import epoch_end_offset, replication_truncation
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.records import RawBatch

NO_EPOCH = -1


class EpochSupport(enum.Enum):
    DIVERGING_EPOCH = "Fetch v12+ reports a diverging epoch"
    OFFSET_FOR_LEADER_EPOCH = "OffsetForLeaderEpoch v2+ answers consumers"
    NONE = "no leader epoch queries"


class FetchPhase(enum.Enum):
    TRUNCATING = "verify the latest local epoch with the source before fetching"
    FETCHING = "fetch from the fetch offset"
    OUT_OF_RANGE = "learn the source's offset bounds"
    FAILED = "stopped; needs an operator"


@dataclass(frozen=True, slots=True)
class PendingTruncation:
    offset: int
    fully: bool
    complete: bool


@dataclass(frozen=True, slots=True)
class PartitionFetchState:
    fetch_offset: int
    last_fetched_epoch: int
    current_leader_epoch: int
    epoch_support: EpochSupport
    phase: FetchPhase = FetchPhase.FETCHING
    pending: PendingTruncation | None = None
    delayed_until_ms: int = 0
    failure: str | None = None

    @classmethod
    def initial(
        cls,
        *,
        log_end_offset: int,
        latest_epoch: int | None,
        current_leader_epoch: int,
        epoch_support: EpochSupport,
    ) -> PartitionFetchState:
        """A partition entering MIRRORING (after LME truncation) or a new source leader."""
        epoch = NO_EPOCH if latest_epoch is None else latest_epoch
        truncating = epoch != NO_EPOCH and epoch_support is EpochSupport.OFFSET_FOR_LEADER_EPOCH
        return cls(
            fetch_offset=log_end_offset,
            last_fetched_epoch=epoch,
            current_leader_epoch=current_leader_epoch,
            epoch_support=epoch_support,
            phase=FetchPhase.TRUNCATING if truncating else FetchPhase.FETCHING,
        )


# -- actions ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Truncate:
    offset: int


@dataclass(frozen=True, slots=True)
class TruncateFullyAndStartAt:
    offset: int


@dataclass(frozen=True, slots=True)
class QueryEpochEndOffset:
    """OffsetForLeaderEpoch for ``epoch`` with ``current_leader_epoch`` as fencing."""

    epoch: int
    current_leader_epoch: int


@dataclass(frozen=True, slots=True)
class QueryOffsetBounds:
    """ListOffsets EARLIEST and LATEST on the source."""


@dataclass(frozen=True, slots=True)
class Fetch:
    offset: int
    last_fetched_epoch: int
    current_leader_epoch: int


@dataclass(frozen=True, slots=True)
class Wait:
    until_ms: int


@dataclass(frozen=True, slots=True)
class Fail:
    reason: str


FetchAction = (
    Truncate
    | TruncateFullyAndStartAt
    | QueryEpochEndOffset
    | QueryOffsetBounds
    | Fetch
    | Wait
    | Fail
)


def next_action(state: PartitionFetchState, now_ms: int) -> FetchAction:
    if state.phase is FetchPhase.FAILED:
        return Fail(state.failure or "failed")
    if state.pending is not None:
        if state.pending.fully:
            return TruncateFullyAndStartAt(state.pending.offset)
        return Truncate(state.pending.offset)
    if now_ms < state.delayed_until_ms:
        return Wait(state.delayed_until_ms)
    if state.phase is FetchPhase.TRUNCATING:
        return QueryEpochEndOffset(state.last_fetched_epoch, state.current_leader_epoch)
    if state.phase is FetchPhase.OUT_OF_RANGE:
        return QueryOffsetBounds()
    uses_epoch = state.epoch_support is EpochSupport.DIVERGING_EPOCH
    return Fetch(
        state.fetch_offset,
        state.last_fetched_epoch if uses_epoch else NO_EPOCH,
        state.current_leader_epoch,
    )


# -- steps ------------------------------------------------------------------------------


def failed(state: PartitionFetchState, reason: str) -> PartitionFetchState:
    return replace(state, phase=FetchPhase.FAILED, failure=reason, pending=None)


def on_truncated(
    state: PartitionFetchState, *, log_end_offset: int, latest_epoch: int | None
) -> PartitionFetchState:
    """The pending truncation ran; fetch from the new log end (or verify the next epoch).

    With diverging-epoch fetches an unfinished cut needs no query: the next fetch carries
    the new last fetched epoch and the source reports any remaining divergence.
    """
    complete = state.pending is None or state.pending.complete
    epoch = NO_EPOCH if latest_epoch is None else latest_epoch
    still_truncating = (
        not complete
        and epoch != NO_EPOCH
        and state.epoch_support is EpochSupport.OFFSET_FOR_LEADER_EPOCH
    )
    return replace(
        state,
        fetch_offset=log_end_offset,
        last_fetched_epoch=epoch,
        pending=None,
        phase=FetchPhase.TRUNCATING if still_truncating else FetchPhase.FETCHING,
    )


def on_leader_change(state: PartitionFetchState, leader_epoch: int) -> PartitionFetchState:
    """The source partition has a new leader epoch; older sources must re-verify."""
    if state.phase is FetchPhase.FAILED:
        return state
    verify = (
        state.epoch_support is EpochSupport.OFFSET_FOR_LEADER_EPOCH
        and state.last_fetched_epoch != NO_EPOCH
    )
    return replace(
        state,
        current_leader_epoch=leader_epoch,
        delayed_until_ms=0,
        phase=FetchPhase.TRUNCATING if verify else state.phase,
    )


def _divergence(
    state: PartitionFetchState,
    *,
    source_epoch: int,
    source_end_offset: int,
    epoch_entries: Sequence[EpochEntry],
    log_end_offset: int,
) -> PartitionFetchState:
    local = epoch_end_offset(epoch_entries, source_epoch, log_end_offset)
    cut = replication_truncation(
        local_end_for_epoch=local,
        requested_epoch=state.last_fetched_epoch,
        source_epoch=source_epoch,
        source_end_offset=source_end_offset,
        log_end_offset=log_end_offset,
    )
    if cut.offset >= log_end_offset and cut.complete:
        return replace(state, phase=FetchPhase.FETCHING, fetch_offset=log_end_offset)
    return replace(state, pending=PendingTruncation(cut.offset, fully=False, complete=cut.complete))


def on_epoch_end_offset(
    state: PartitionFetchState,
    *,
    error: ErrorCode,
    source_epoch: int,
    source_end_offset: int,
    epoch_entries: Sequence[EpochEntry],
    log_end_offset: int,
    now_ms: int,
    backoff_ms: int,
) -> PartitionFetchState:
    """The OffsetForLeaderEpoch answer for ``state.last_fetched_epoch``."""
    if error is not ErrorCode.NONE:
        return _on_error(state, error, now_ms, backoff_ms)
    return _divergence(
        state,
        source_epoch=source_epoch,
        source_end_offset=source_end_offset,
        epoch_entries=epoch_entries,
        log_end_offset=log_end_offset,
    )


def on_offset_bounds(
    state: PartitionFetchState, *, source_log_start_offset: int, source_end_offset: int
) -> PartitionFetchState:
    """After OFFSET_OUT_OF_RANGE: follow retention, or fail when the source lost data.

    A fetch offset above the source's end means the source no longer has records this
    log copied from it (an unclean election on the source, or a different source); the
    logs cannot be proven consistent, so the partition fails (spec: manual intervention).
    """
    if source_log_start_offset > state.fetch_offset:
        pending = PendingTruncation(source_log_start_offset, fully=True, complete=True)
        return replace(state, pending=pending, phase=FetchPhase.FETCHING)
    if state.fetch_offset > source_end_offset:
        return failed(
            state,
            f"fetch offset {state.fetch_offset} is beyond the source's end offset "
            f"{source_end_offset}: the source lost mirrored records",
        )
    return replace(state, phase=FetchPhase.FETCHING)


@dataclass(frozen=True, slots=True)
class FetchedPartition:
    """One partition of a Fetch response, as the plan needs it."""

    error: ErrorCode
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    batches: Sequence[RawBatch] = ()
    diverging_epoch: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class FetchOutcome:
    state: PartitionFetchState
    append: tuple[RawBatch, ...] = ()
    source_log_start_offset: int | None = None
    refresh_metadata: bool = False


_LEADERSHIP_ERRORS = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.UNKNOWN_TOPIC_ID,
    }
)


def _on_error(
    state: PartitionFetchState, error: ErrorCode, now_ms: int, backoff_ms: int
) -> PartitionFetchState:
    if error is ErrorCode.OFFSET_OUT_OF_RANGE:
        return replace(state, phase=FetchPhase.OUT_OF_RANGE)
    if error.retriable or error in _LEADERSHIP_ERRORS:
        return replace(state, delayed_until_ms=now_ms + backoff_ms)
    return failed(state, f"source answered {error.name}")


def _select_batches(
    state: PartitionFetchState, response: FetchedPartition
) -> tuple[RawBatch, ...] | str:
    """The batches to append, or why the response must fail the partition."""
    selected: list[RawBatch] = []
    expected = state.fetch_offset
    for batch in response.batches:
        if batch.last_offset < expected:
            continue
        if batch.base_offset < expected and not _holds_source_log_start(
            selected, batch, expected, response.log_start_offset
        ):
            return f"batch {batch.base_offset}-{batch.last_offset} straddles offset {expected}"
        if 0 <= response.last_stable_offset <= batch.last_offset:
            break
        if not batch.is_valid():
            return f"batch at offset {batch.base_offset} fails its CRC"
        if batch.partition_leader_epoch > state.current_leader_epoch:
            return (
                f"batch at offset {batch.base_offset} has leader epoch "
                f"{batch.partition_leader_epoch} above the fetch's {state.current_leader_epoch}"
            )
        selected.append(batch)
        expected = batch.next_offset
    return tuple(selected)


def _holds_source_log_start(
    selected: Sequence[RawBatch], batch: RawBatch, fetch_offset: int, source_log_start: int
) -> bool:
    """The first batch may start below the fetch offset when the fetch is at the source's
    log start and that start lies inside the batch (DeleteRecords or retention cut the
    source mid-batch; the log restarted there). The append takes it whole, as a Kafka
    follower does, and the log start follows the source's again."""
    return not selected and fetch_offset == source_log_start <= batch.last_offset


def on_fetch_response(
    state: PartitionFetchState,
    response: FetchedPartition,
    *,
    epoch_entries: Sequence[EpochEntry],
    log_end_offset: int,
    now_ms: int,
    backoff_ms: int,
) -> FetchOutcome:
    """Turn one fetched partition into batches to append and the next state.

    Gaps between batches (a compacted source) are kept; the executor appends with
    ``append_as_follower(batches, allow_gaps=True)`` and then raises the local log start
    to ``source_log_start_offset`` (bounded by its high watermark).
    """
    if state.phase is not FetchPhase.FETCHING or state.pending is not None:
        return FetchOutcome(state)
    if response.error is not ErrorCode.NONE:
        return FetchOutcome(
            _on_error(state, response.error, now_ms, backoff_ms),
            refresh_metadata=response.error in _LEADERSHIP_ERRORS,
        )
    source_start = response.log_start_offset if response.log_start_offset >= 0 else None
    if response.diverging_epoch is not None:
        epoch, end_offset = response.diverging_epoch
        diverged = _divergence(
            state,
            source_epoch=epoch,
            source_end_offset=end_offset,
            epoch_entries=epoch_entries,
            log_end_offset=log_end_offset,
        )
        return FetchOutcome(diverged, source_log_start_offset=source_start)
    selected = _select_batches(state, response)
    if isinstance(selected, str):
        return FetchOutcome(failed(state, selected))
    if not selected:
        return FetchOutcome(state, source_log_start_offset=source_start)
    last = selected[-1]
    epoch = last.partition_leader_epoch
    advanced = replace(
        state,
        fetch_offset=last.next_offset,
        last_fetched_epoch=epoch if epoch >= 0 else state.last_fetched_epoch,
    )
    return FetchOutcome(advanced, append=selected, source_log_start_offset=source_start)
