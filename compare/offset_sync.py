"""MirrorMaker 2's offset syncs: when one is emitted, how 64 of them are kept, how they translate.

MM2 copies records one by one, so a record's offset on the target differs from its offset
on the source. The source task publishes an *offset sync* (upstream offset ↔ downstream
offset) now and then; the checkpoint task keeps a small per-partition cache of them and
translates a consumer group's committed upstream offset with it. Both halves are lossy by
design, and this module reproduces that loss so the comparison can measure it:

- Emission: a sync only every ``offset.lag.max`` upstream offsets (and whenever the
  upstream offsets jump or the downstream offsets move backwards).
- Cache: at most 64 syncs per partition, newest first. The latest and the earliest
  sync are always kept; when a 65th arrives, one sync in between is dropped, but only
  where the gap it leaves is at most ``max(g, 3 * age)`` (``g = offset.lag.max``, age =
  how far the newer neighbour is behind the latest sync). Gaps therefore grow with age:
  recent offsets translate closely, old ones fall between widely spaced syncs, and a
  committed offset ``lag`` behind the latest sync lands fewer than ``max(g, 3 * lag)``
  offsets before itself. With the factor 3, 64 entries provably cover any 63-bit offset
  range (see ``OffsetSyncCache``).
- Translation: the latest cached sync at or before the upstream offset; exact only when
  the offsets are equal, otherwise one past the sync's downstream offset, because the
  records after the sync may have landed anywhere after it downstream. An offset older
  than every cached sync, or beyond what was replicated, cannot be translated (-1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

SYNCS_PER_PARTITION = 64
GAP_PER_AGE = 3
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


class OffsetSyncCache:
    """The checkpoint task's per-partition table of at most 64 offset syncs, newest first.

    Invariant: for neighbours ``newer > older`` in the table, either no sync was ever
    received between them, or ``newer - older <= max(g, 3 * (latest - newer))``.
    Translation bound: a received sync ``u`` with ``lag = latest - u`` lies between
    neighbours (or is cached), so its closest cached sync at or before it is less than
    ``max(g, 3 * lag)`` behind it, since ``latest - newer < lag``.
    Size: if no sync in between could be dropped, the ages ``A_k`` would satisfy
    ``A_{k+1} > A_{k-1} + max(g, 3 * A_{k-1})``, so ``A_64 >= 4^31 * (g + 1) >= 2^63``,
    beyond any offset: a 65th entry always leaves one that can be dropped.
    """

    def __init__(self, granularity: int) -> None:
        if granularity < 1:
            raise ValueError("the cache granularity (offset.lag.max) must be at least 1")
        self.granularity = granularity
        self._syncs: list[OffsetSync] = []

    @property
    def syncs(self) -> tuple[OffsetSync, ...]:
        return tuple(self._syncs)

    def _max_gap(self, newer: OffsetSync) -> int:
        """Widest gap allowed behind ``newer`` once syncs between it and the next are gone."""
        age = self._syncs[0].upstream_offset - newer.upstream_offset
        return max(self.granularity, GAP_PER_AGE * age)

    def update(self, sync: OffsetSync) -> None:
        """Take a sync read from the offset-syncs topic (they arrive in upstream order).

        An upstream offset that goes backwards means the source partition was recreated
        or truncated: every cached mapping is then meaningless and is dropped.
        """
        if not self._syncs or sync.upstream_offset < self._syncs[0].upstream_offset:
            self._syncs = [sync]
            return
        if sync.upstream_offset == self._syncs[0].upstream_offset:
            self._syncs[0] = sync
            return
        self._syncs.insert(0, sync)
        if len(self._syncs) > SYNCS_PER_PARTITION:
            del self._syncs[self._most_redundant()]

    def _most_redundant(self) -> int:
        """Index of the droppable sync whose gap would use the least of its allowance.

        Dropping where the table is densest relative to age keeps the spacing growing
        evenly with age, so all 64 entries stay useful.
        """
        droppable = [
            (Fraction(gap, allowance), k)
            for k in range(1, len(self._syncs) - 1)
            if (gap := self._syncs[k - 1].upstream_offset - self._syncs[k + 1].upstream_offset)
            <= (allowance := self._max_gap(self._syncs[k - 1]))
        ]
        return min(droppable)[1]


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
