"""MirrorMaker 2's offset syncs: when one is emitted, how 64 of them are kept, how they translate.

MM2 copies records one by one, so a record's offset on the target differs from its offset
on the source. The source task publishes an *offset sync* (upstream offset ↔ downstream
offset) now and then; the checkpoint task keeps a small per-partition cache of them and
translates a consumer group's committed upstream offset with it. Both halves are lossy by
design, and this module reproduces that loss so the comparison can measure it:

- Emission: a sync only every ``offset.lag.max`` upstream offsets (and whenever the
  upstream offsets jump or the downstream offsets move backwards).
- Cache: at most 64 syncs per partition. Slot 0 is always the latest; the others are
  spread over power-of-two distance buckets behind it (bucket ``i`` holds distances
  ``[g(2^i-1), g(2^(i+1)-1))`` with ``g = offset.lag.max``), one sync per bucket, the
  oldest one, so a sync ages from bucket to bucket instead of being thrown away early.
  Recent offsets translate closely; old ones fall between widely spaced syncs.
- Translation: the latest cached sync at or before the upstream offset; exact only when
  the offsets are equal, otherwise one past the sync's downstream offset, because the
  records after the sync may have landed anywhere after it downstream. An offset older
  than every cached sync, or beyond what was replicated, cannot be translated (-1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

SYNCS_PER_PARTITION = 64
UNTRANSLATABLE = -1


@dataclass(frozen=True, slots=True)
class OffsetSync:
    upstream_offset: int
    downstream_offset: int


class OffsetSyncEmitter:
    """Decides, per replicated record of one partition, whether an offset sync is due."""

    def __init__(self, offset_lag_max: int) -> None:
        if offset_lag_max < 1:
            raise ValueError("offset.lag.max must be at least 1")
        self.offset_lag_max = offset_lag_max
        self._last_sync: OffsetSync | None = None
        self._previous: OffsetSync | None = None

    def update(self, upstream_offset: int, downstream_offset: int) -> OffsetSync | None:
        """The sync to publish after this record was written downstream, or None."""
        current = OffsetSync(upstream_offset, downstream_offset)
        previous, self._previous = self._previous, current
        due = (
            self._last_sync is None
            or previous is None
            or upstream_offset - self._last_sync.upstream_offset >= self.offset_lag_max
            or upstream_offset != previous.upstream_offset + 1
            or downstream_offset < previous.downstream_offset
        )
        if not due:
            return None
        self._last_sync = current
        return current


def distance_bucket(distance: int, granularity: int) -> int:
    """Index of the power-of-two bucket ``[g(2^i-1), g(2^(i+1)-1))`` holding ``distance``."""
    return max(1, (distance // granularity + 1).bit_length() - 1)


class OffsetSyncCache:
    """The checkpoint task's per-partition table of at most 64 offset syncs, newest first."""

    def __init__(self, granularity: int) -> None:
        if granularity < 1:
            raise ValueError("the cache granularity (offset.lag.max) must be at least 1")
        self.granularity = granularity
        self._syncs: list[OffsetSync] = []

    @property
    def syncs(self) -> tuple[OffsetSync, ...]:
        return tuple(self._syncs)

    def update(self, sync: OffsetSync) -> None:
        """Take a sync read from the offset-syncs topic (they arrive in upstream order).

        An upstream offset that goes backwards means the source partition was recreated
        or truncated: every cached mapping is then meaningless and is dropped.
        """
        if not self._syncs or sync.upstream_offset < self._syncs[0].upstream_offset:
            self._syncs = [sync]
            return
        candidates = [sync, *(s for s in self._syncs if s.upstream_offset < sync.upstream_offset)]
        oldest_per_bucket: dict[int, OffsetSync] = {}
        for candidate in candidates[1:]:
            bucket = distance_bucket(
                sync.upstream_offset - candidate.upstream_offset, self.granularity
            )
            if bucket < SYNCS_PER_PARTITION:
                oldest_per_bucket[bucket] = candidate
        self._syncs = [sync, *(oldest_per_bucket[b] for b in sorted(oldest_per_bucket))]


def translate_downstream(
    syncs: Sequence[OffsetSync], upstream_offset: int, *, upstream_log_end: int | None = None
) -> int:
    """MM2's rule: downstream offset for a committed upstream offset, or -1.

    ``upstream_log_end`` is how far the source was replicated (exclusive): a group
    committed past it points at records that are not on the target yet.
    """
    if upstream_log_end is not None and upstream_offset > upstream_log_end:
        return UNTRANSLATABLE
    at_or_before = [s for s in syncs if s.upstream_offset <= upstream_offset]
    if not at_or_before:
        return UNTRANSLATABLE
    closest = max(at_or_before, key=lambda s: s.upstream_offset)
    if closest.upstream_offset == upstream_offset:
        return closest.downstream_offset
    return closest.downstream_offset + 1
