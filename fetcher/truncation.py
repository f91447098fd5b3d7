"""Where a mirror partition's log must be cut, as pure functions of offsets and epochs.

Phase 2's rule (:func:`replication_truncation`) is also every follower's: intra-cluster
replication cuts its logs with it through ``mirrorsim.fetcher.plan``.

Two-phase convergence (KIP-1279 "Log Convergence"):

1. LME truncation (PREPARING): cut at the start offset of the first local epoch above the
   source's last mirrored epoch (LME). LME -1 means the source knows nothing of this
   partition, so everything goes and mirroring starts from scratch. Afterwards the epoch
   histories agree, but the last shared epoch may still end at different offsets.
2. Replication-protocol truncation (while fetching): Kafka's follower rule. For the
   latest local epoch ask where that epoch ends on the source; cut at the smaller of the
   two end offsets. If the source answers with an older epoch, the cut is not final:
   repeat with the epoch now latest locally.

On stop (failover) the partition is cut to a transaction-safe point at or below its LSO
before the last mirrored epoch is read from the log (:func:`stop_truncation_offset`,
:func:`stopping_plan`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from mirrorsim.broker.log.epoch_cache import UNDEFINED_EPOCH, EpochEntry

NO_LAST_MIRRORED_EPOCH = -1


def lme_truncation_offset(
    epoch_entries: Sequence[EpochEntry], last_mirrored_epoch: int, log_end_offset: int
) -> int:
    """Offset to truncate to so that no local epoch exceeds the source's LME.

    LME -1 gives 0 (truncate everything; a ``truncate_to(0)`` below the log start empties
    the log and restarts it at 0, and the first fetch then learns the source's log start).
    When no local epoch exceeds the LME nothing is cut (the log end offset is returned).
    """
    if last_mirrored_epoch == NO_LAST_MIRRORED_EPOCH:
        return 0
    for entry in epoch_entries:
        if entry.epoch > last_mirrored_epoch:
            return min(entry.start_offset, log_end_offset)
    return log_end_offset


def epoch_end_offset(
    epoch_entries: Sequence[EpochEntry], epoch: int, log_end_offset: int
) -> tuple[int, int]:
    """(largest local epoch ≤ ``epoch``, where it ends), OffsetForLeaderEpoch's answer.

    Same rule as ``LeaderEpochFileCache.end_offset_for``, over a plain list of entries so
    plans can be computed without a log: the latest epoch ends at the log end offset, an
    epoch older than every entry ends where the first entry starts, and an undefined or
    too-new epoch gives (-1, -1).
    """
    if epoch == UNDEFINED_EPOCH or not epoch_entries or epoch > epoch_entries[-1].epoch:
        return UNDEFINED_EPOCH, UNDEFINED_EPOCH
    if epoch == epoch_entries[-1].epoch:
        return epoch, log_end_offset
    for entry, following in itertools.pairwise(epoch_entries):
        if entry.epoch <= epoch < following.epoch:
            return entry.epoch, following.start_offset
    return epoch, epoch_entries[0].start_offset


@dataclass(frozen=True, slots=True)
class EpochTruncation:
    """A replication-protocol cut: ``offset``, and whether the logs now agree up to it."""

    offset: int
    complete: bool


def replication_truncation(
    *,
    local_end_for_epoch: tuple[int, int],
    requested_epoch: int,
    source_epoch: int,
    source_end_offset: int,
    log_end_offset: int,
    unknown_epoch_offset: int = 0,
) -> EpochTruncation:
    """Kafka's follower rule after OffsetForLeaderEpoch (or a fetch's diverging epoch).

    ``requested_epoch`` is the latest local epoch the source was asked about;
    ``(source_epoch, source_end_offset)`` its answer (the largest source epoch ≤ the
    requested one and where it ends; ``(-1, -1)`` when the source has none);
    ``local_end_for_epoch`` is the local cache's answer for ``source_epoch``.

    - source has no such epoch: everything local is beyond the source's history; cut to
      ``unknown_epoch_offset``: 0 for a mirror (the caller then restarts at the source's
      log start), the high watermark for a follower, which never drops what its ISR
      acknowledged on an answer that places nothing (Kafka's
      ``getOffsetTruncationState``);
    - source answers the requested epoch: cut at min(local end, source end); done;
    - source answers an older epoch: cut at min(local end of it, source end), not done:
      the next round asks about the epoch that is latest locally after the cut.
    """
    if source_epoch == UNDEFINED_EPOCH or source_end_offset < 0:
        return EpochTruncation(min(unknown_epoch_offset, log_end_offset), complete=True)
    local_epoch, local_end = local_end_for_epoch
    if local_epoch == UNDEFINED_EPOCH:
        return EpochTruncation(min(source_end_offset, log_end_offset), complete=True)
    offset = min(local_end, source_end_offset, log_end_offset)
    complete = source_epoch == requested_epoch and local_epoch == source_epoch
    return EpochTruncation(offset, complete=complete)


@dataclass(frozen=True, slots=True)
class TxnSpan:
    """A transaction as the local log holds it: data from ``first_offset``.

    ``marker_offset`` is where its COMMIT/ABORT marker sits (None while open).
    """

    producer_id: int
    first_offset: int
    marker_offset: int | None
    aborted: bool


def stop_truncation_offset(last_stable_offset: int, transactions: Iterable[TxnSpan]) -> int:
    """The offset to truncate to when mirroring stops: the LSO, lowered if it must be.

    Truncating to the LSO drops every open transaction whole. It can also drop the marker
    of a transaction that started below the LSO and ended above it. The MIRROR_PID_RESET
    written next expires all producer state, after which records without a marker read
    as committed: right for a COMMIT, wrong for an ABORT. So the cut is lowered to the
    first offset of every such aborted transaction, repeatedly, until none straddles it.
    """
    spans = list(transactions)
    cut = last_stable_offset
    changed = True
    while changed:
        changed = False
        for span in spans:
            straddles = span.first_offset < cut and (
                span.marker_offset is None or span.marker_offset >= cut
            )
            if straddles and (span.aborted or span.marker_offset is None):
                cut = span.first_offset
                changed = True
    return cut


def transaction_spans(
    batches: Iterable[tuple[int, int, bool, bool, bool | None]],
) -> list[TxnSpan]:
    """Transactions of a log from its batches' ``(base_offset, producer_id, is_transactional,
    is_control, aborted)`` (``aborted`` is the marker's kind for control batches, else None).
    """
    open_first: dict[int, int] = {}
    spans: list[TxnSpan] = []
    for base_offset, producer_id, transactional, control, aborted in batches:
        if not transactional or producer_id < 0:
            continue
        if control:
            first = open_first.pop(producer_id, None)
            if first is not None:
                spans.append(TxnSpan(producer_id, first, base_offset, bool(aborted)))
        else:
            open_first.setdefault(producer_id, base_offset)
    spans.extend(TxnSpan(pid, first, None, False) for pid, first in open_first.items())
    return sorted(spans, key=lambda s: (s.first_offset, s.producer_id))


def last_mirrored_epoch(epoch_entries: Sequence[EpochEntry], log_end_offset: int) -> int:
    """The latest epoch with data below ``log_end_offset`` (after the stop truncation)."""
    epochs = [e.epoch for e in epoch_entries if e.start_offset < log_end_offset]
    return epochs[-1] if epochs else NO_LAST_MIRRORED_EPOCH


@dataclass(frozen=True, slots=True)
class OffsetRange:
    """Offsets ``[start, end)``."""

    start: int
    end: int

    @property
    def count(self) -> int:
        return self.end - self.start


def dropped_offsets(log_start_offset: int, log_end_offset: int, truncate_to: int) -> OffsetRange:
    """The offsets a ``truncate_to`` would remove (empty when nothing goes), for reports."""
    start = min(max(truncate_to, log_start_offset), log_end_offset)
    return OffsetRange(start, log_end_offset)


# -- the STOPPING sequence -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RemoveFetchers:
    pass


@dataclass(frozen=True, slots=True)
class TruncateTo:
    offset: int


@dataclass(frozen=True, slots=True)
class PersistLastMirroredEpoch:
    epoch: int


@dataclass(frozen=True, slots=True)
class BumpLeaderEpoch:
    min_epoch: int


@dataclass(frozen=True, slots=True)
class AppendMirrorPidReset:
    leader_epoch: int
    source_cluster_id: str


@dataclass(frozen=True, slots=True)
class MarkStopped:
    pass


StopStep = (
    RemoveFetchers
    | TruncateTo
    | PersistLastMirroredEpoch
    | BumpLeaderEpoch
    | AppendMirrorPidReset
    | MarkStopped
)


def stopping_plan(
    *,
    epoch_entries: Sequence[EpochEntry],
    log_end_offset: int,
    last_stable_offset: int,
    transactions: Iterable[TxnSpan],
    current_leader_epoch: int,
    source_cluster_id: str,
) -> tuple[StopStep, ...]:
    """The STOPPING actions, in order, for a partition whose fetchers may still run.

    The LME is read from the log *after* the cut (the latest epoch with data left, all of
    it from the source); the new leader epoch is above both the current local leader
    epoch and every epoch in the log, so records written after failover sort after
    everything mirrored, and the MIRROR_PID_RESET is the first batch of that epoch.
    """
    cut = stop_truncation_offset(last_stable_offset, transactions)
    lme = last_mirrored_epoch(epoch_entries, cut)
    log_epochs = [e.epoch for e in epoch_entries]
    new_epoch = max([current_leader_epoch, *log_epochs]) + 1
    return (
        RemoveFetchers(),
        TruncateTo(cut),
        PersistLastMirroredEpoch(lme),
        BumpLeaderEpoch(new_epoch),
        AppendMirrorPidReset(new_epoch, source_cluster_id),
        MarkStopped(),
    )
