"""Every fetcher's plan plus step, per partition and without I/O: followers and mirrors.

Kafka has one ``AbstractFetcherThread`` and the replica fetcher as one user of it; here one
plan serves both users, the follower fetcher of ``broker/replica/`` (inter-broker Fetch
to the partition's leader) and the mirror fetcher of ``fetcher/task.py`` (consumer Fetch
to another cluster). What differs between them is data, :class:`FetchRules`, not code:
whether answers stop at the LSO, whether a partition can fail, and where an epoch the
leader does not know cuts the log.

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

Followers (:data:`FOLLOWER_RULES`) differ where Kafka's replica fetcher does: they read
up to the leader's log end, a bad batch or an unexpected error only delays the partition
(Kafka's ``partitionsWithError``) after the batches before it are appended, a leader log
end below the follower's is an unclean election and cuts the follower back to it, and an
epoch the leader cannot place cuts no lower than the high watermark, because a follower
in the ISR holds acknowledged records up to there.
"""

from __future__ import annotations

import enum
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from mirrorsim.broker.log.epoch_cache import EpochEntry
from mirrorsim.fetcher.truncation import epoch_end_offset, replication_truncation
from mirrorsim.protocol.errors import ErrorCode, error_code_from_wire
from mirrorsim.protocol.records import RawBatch
from mirrorsim.protocol.records.raw_batch import iter_batches

NO_EPOCH = -1


class EpochSupport(enum.Enum):
    DIVERGING_EPOCH = "Fetch v12+ reports a diverging epoch"
    OFFSET_FOR_LEADER_EPOCH = "OffsetForLeaderEpoch v2+ answers consumers"
    NONE = "no leader epoch queries"


class UnknownEpochCut(enum.Enum):
    """Where a log is cut when the leader has no epoch at or below the one asked about."""

    EVERYTHING = "nothing local is in the leader's history: cut to 0 and refetch"
    TO_HIGH_WATERMARK = "keep what the ISR acknowledged: cut to the high watermark"


@dataclass(frozen=True, slots=True)
class FetchRules:
    """What one kind of fetcher does differently, as Kafka's endpoint capabilities."""

    name: str
    read_committed: bool
    """Answers are capped at the leader's LSO: a batch ending at or beyond it waits."""
    fails: bool
    """A bad batch, an unexpected error or a leader that lost records fails the partition
    (it waits for an operator); otherwise the partition backs off and tries again, and a
    leader log end below the fetch offset cuts the log back to it."""
    unknown_epoch: UnknownEpochCut


MIRROR_RULES = FetchRules(
    "mirror", read_committed=True, fails=True, unknown_epoch=UnknownEpochCut.EVERYTHING
)
FOLLOWER_RULES = FetchRules(
    "follower", read_committed=False, fails=False, unknown_epoch=UnknownEpochCut.TO_HIGH_WATERMARK
)

LEADERSHIP_ERRORS = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.UNKNOWN_TOPIC_ID,
    }
)
"""Errors that mean "ask the metadata who leads now" rather than "try again here"."""


def fetcher_index(topic: str, partition: int, num_fetchers: int) -> int:
    """Kafka's ``(31 * topic.hashCode + partition) % numFetchers``, with a stable hash, so a
    partition keeps its fetcher across restarts and the partitions spread evenly."""
    return (31 * zlib.crc32(topic.encode()) + partition) % num_fetchers


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
    rules: FetchRules = MIRROR_RULES

    @classmethod
    def initial(
        cls,
        *,
        log_end_offset: int,
        latest_epoch: int | None,
        current_leader_epoch: int,
        epoch_support: EpochSupport,
        rules: FetchRules = MIRROR_RULES,
    ) -> PartitionFetchState:
        """A partition entering MIRRORING (after LME truncation), a new source leader, or
        a follower of a new leader epoch."""
        epoch = NO_EPOCH if latest_epoch is None else latest_epoch
        truncating = epoch != NO_EPOCH and epoch_support is EpochSupport.OFFSET_FOR_LEADER_EPOCH
        return cls(
            fetch_offset=log_end_offset,
            last_fetched_epoch=epoch,
            current_leader_epoch=current_leader_epoch,
            epoch_support=epoch_support,
            phase=FetchPhase.TRUNCATING if truncating else FetchPhase.FETCHING,
            rules=rules,
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


def _failed_or_delayed(
    state: PartitionFetchState, reason: str, now_ms: int, backoff_ms: int
) -> PartitionFetchState:
    """FAILED under rules that fail; otherwise the same fetch again after a backoff."""
    if state.rules.fails:
        return failed(state, reason)
    return replace(state, delayed_until_ms=now_ms + backoff_ms)


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
    high_watermark: int,
) -> PartitionFetchState:
    local = epoch_end_offset(epoch_entries, source_epoch, log_end_offset)
    unknown_cut = (
        min(high_watermark, log_end_offset)
        if state.rules.unknown_epoch is UnknownEpochCut.TO_HIGH_WATERMARK
        else 0
    )
    cut = replication_truncation(
        local_end_for_epoch=local,
        requested_epoch=state.last_fetched_epoch,
        source_epoch=source_epoch,
        source_end_offset=source_end_offset,
        log_end_offset=log_end_offset,
        unknown_epoch_offset=unknown_cut,
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
    high_watermark: int = 0,
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
        high_watermark=high_watermark,
    )


def on_offset_bounds(
    state: PartitionFetchState, *, source_log_start_offset: int, source_end_offset: int
) -> PartitionFetchState:
    """After OFFSET_OUT_OF_RANGE: follow retention, or fail when the source lost data.

    A fetch offset above the source's end means the source no longer has records this
    log copied from it (an unclean election on the source, or a different source); the
    logs cannot be proven consistent, so a mirror partition fails (spec: manual
    intervention). A follower cuts back to its leader's end, as Kafka's does after an
    unclean election.
    """
    if source_log_start_offset > state.fetch_offset:
        pending = PendingTruncation(source_log_start_offset, fully=True, complete=True)
        return replace(state, pending=pending, phase=FetchPhase.FETCHING)
    if state.fetch_offset > source_end_offset and not state.rules.fails:
        pending = PendingTruncation(source_end_offset, fully=False, complete=True)
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


def known_error(error: ErrorCode | int) -> ErrorCode:
    """A wire error code as the plan reasons about it: a code this build does not know is
    UNKNOWN_SERVER_ERROR (not retriable, so a mirror partition fails on it)."""
    return error if isinstance(error, ErrorCode) else ErrorCode.UNKNOWN_SERVER_ERROR


def fetched_from_wire(data: Any) -> FetchedPartition:
    """One partition of a wire Fetch response, as the plan needs it. The batches are views
    of the response's buffer: they are checked and appended unchanged, never kept."""
    diverging = getattr(data, "diverging_epoch", None)
    has_divergence = diverging is not None and (diverging.epoch >= 0 or diverging.end_offset >= 0)
    return FetchedPartition(
        error=known_error(error_code_from_wire(data.error_code)),
        high_watermark=int(data.high_watermark),
        last_stable_offset=int(getattr(data, "last_stable_offset", -1)),
        log_start_offset=int(getattr(data, "log_start_offset", -1)),
        batches=tuple(iter_batches(data.records or b"", share_memory=True)),
        diverging_epoch=(int(diverging.epoch), int(diverging.end_offset))
        if has_divergence
        else None,
    )


@dataclass(frozen=True, slots=True)
class FetchOutcome:
    state: PartitionFetchState
    append: tuple[RawBatch, ...] = ()
    source_log_start_offset: int | None = None
    refresh_metadata: bool = False


def _on_error(
    state: PartitionFetchState, error: ErrorCode, now_ms: int, backoff_ms: int
) -> PartitionFetchState:
    if error is ErrorCode.OFFSET_OUT_OF_RANGE:
        return replace(state, phase=FetchPhase.OUT_OF_RANGE)
    if error.retriable or error in LEADERSHIP_ERRORS:
        return replace(state, delayed_until_ms=now_ms + backoff_ms)
    return _failed_or_delayed(state, f"source answered {error.name}", now_ms, backoff_ms)


def _select_batches(
    state: PartitionFetchState, response: FetchedPartition, epoch_limit: int, verify_crc: bool
) -> tuple[tuple[RawBatch, ...], str | None]:
    """The batches to append, and why the rest of the response is refused (if it is).

    The batches are those before the first that starts below the fetch offset, fails its
    CRC, or carries a leader epoch above ``epoch_limit`` (KAFKA-18723; a negative limit
    is unknown and checks nothing); under read_committed rules a batch reaching the LSO
    ends them without a problem. Without ``verify_crc`` the CRCs are checked only when
    another problem refuses the rest, so that the reason given is still the first
    problem in the order above.
    """
    selected: list[RawBatch] = []
    expected = state.fetch_offset
    problem: str | None = None
    for batch in response.batches:
        if batch.last_offset < expected:
            continue
        if batch.base_offset < expected and not _holds_source_log_start(
            selected, batch, expected, response.log_start_offset
        ):
            problem = f"batch {batch.base_offset}-{batch.last_offset} straddles offset {expected}"
            break
        if state.rules.read_committed and 0 <= response.last_stable_offset <= batch.last_offset:
            break
        if verify_crc and not batch.is_valid():
            problem = crc_problem(batch)
            break
        if 0 <= epoch_limit < batch.partition_leader_epoch:
            problem = (
                crc_problem(batch)
                if not batch.is_valid()
                else f"batch at offset {batch.base_offset} has leader epoch "
                f"{batch.partition_leader_epoch} above the fetch's {epoch_limit}"
            )
            break
        selected.append(batch)
        expected = batch.next_offset
    if problem is not None and not verify_crc:
        for index, batch in enumerate(selected):
            if not batch.is_valid():
                return tuple(selected[:index]), crc_problem(batch)
    return tuple(selected), problem


def crc_problem(batch: RawBatch) -> str:
    """Why a batch whose CRC does not match its bytes is refused."""
    return f"batch at offset {batch.base_offset} fails its CRC"


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
    high_watermark: int = 0,
    epoch_limit: int | None = None,
    verify_crc: bool = True,
) -> FetchOutcome:
    """Turn one fetched partition into batches to append and the next state.

    Gaps between batches (a compacted source) are kept; the executor appends with
    ``append_as_follower(batches, allow_gaps=True)`` and then raises the local log start
    to ``source_log_start_offset`` (bounded by its high watermark). ``epoch_limit`` is
    the newest leader epoch a batch may carry, the fetch's current leader epoch unless
    the batches carry another cluster's epochs (a follower of a mirror partition).

    Without ``verify_crc`` the caller checks every batch's CRC before appending it and
    fails the partition on a mismatch, as the plan would; only rules that fail may leave
    it to the caller (see :func:`_select_batches`).

    A refused batch fails the partition under rules that fail, and nothing is appended;
    otherwise the batches before it are appended and the partition backs off.
    """
    if not verify_crc and not state.rules.fails:
        raise ValueError(f"{state.rules.name} rules append the batches before a bad one")
    if state.phase is not FetchPhase.FETCHING or state.pending is not None:
        return FetchOutcome(state)
    if response.error is not ErrorCode.NONE:
        return FetchOutcome(
            _on_error(state, response.error, now_ms, backoff_ms),
            refresh_metadata=response.error in LEADERSHIP_ERRORS,
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
            high_watermark=high_watermark,
        )
        return FetchOutcome(diverged, source_log_start_offset=source_start)
    limit = state.current_leader_epoch if epoch_limit is None else epoch_limit
    selected, problem = _select_batches(state, response, limit, verify_crc)
    if problem is not None and state.rules.fails:
        return FetchOutcome(failed(state, problem))
    if problem is not None:
        state = _failed_or_delayed(state, problem, now_ms, backoff_ms)
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
