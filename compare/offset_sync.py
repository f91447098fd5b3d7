"""MirrorMaker 2's offset syncs: when one is emitted, how 64 of them are kept, how they translate.

MM2 copies records one by one, so a record's offset on the target differs from its offset
on the source. The source task publishes an *offset sync* (upstream offset ↔ downstream
offset) now and then; the checkpoint task keeps a small per-partition cache of them and
translates a consumer group's committed upstream offset with it. Both halves are lossy by
design, and this module reproduces that loss so the comparison can measure it:

- Emission: Kafka's ``OffsetSyncWriter``: a sync at once when the downstream offset is
  more than ``offset.lag.max`` past the last sync's (so every ``offset.lag.max + 1``
  records of a contiguous copy), when the upstream offsets jump or the downstream offsets
  move backwards; and, at each offset commit of the task, one for the latest record not
  synced yet.
- Cache: Kafka's ``OffsetSyncStore``: 64 slots per partition whose distinct syncs are
  spaced exponentially by age (its invariants A-D, see ``OffsetSyncCache``): recent
  offsets translate closely, old ones fall between widely spaced syncs.
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
    """Decides, per replicated record of one partition, whether an offset sync is due:
    Kafka's ``OffsetSyncWriter.PartitionState.update`` and its delayed syncs.

    Staleness is measured downstream and from one past the last sync, because that is
    where translation through the last sync would put a group: a sync is due once
    ``downstream - (last sync downstream + 1) >= offset.lag.max``.
    """

    def __init__(self, offset_lag_max: int) -> None:
        if offset_lag_max < 1:
            raise ValueError("offset.lag.max must be at least 1")
        self.offset_lag_max = offset_lag_max
        self._last_sync_downstream: int | None = None
        self._previous: OffsetSync | None = None
        self._delayed: OffsetSync | None = None

    def update(self, upstream_offset: int, downstream_offset: int) -> OffsetSync | None:
        """The sync to publish now that this record was written downstream, or None (the
        record's mapping is then held back until the next offset commit)."""
        current = OffsetSync(upstream_offset, downstream_offset)
        previous, self._previous = self._previous, current
        last = self._last_sync_downstream
        due = (
            last is None
            or downstream_offset - (last + 1) >= self.offset_lag_max
            or previous is None
            or upstream_offset - previous.upstream_offset != 1
            or downstream_offset < previous.downstream_offset
        )
        if not due:
            self._delayed = current
            return None
        self._last_sync_downstream = downstream_offset
        self._delayed = None
        return current

    def promote_delayed(self) -> OffsetSync | None:
        """At the task's offset commit (``MirrorSourceTask.commit``): the latest record's
        mapping if it was held back, so a quiet topic's end still translates exactly."""
        delayed, self._delayed = self._delayed, None
        return delayed


class OffsetSyncCache:
    """The checkpoint task's per-partition store of offset syncs: Kafka's ``OffsetSyncStore``.

    64 slots, newest first; a sync may fill several neighbouring slots (the distinct syncs
    are what the store holds). Kafka keeps four invariants, all checkable between
    neighbours and holding for every pair ``i < j`` of distinct slots:

    - A: slot 0 holds the latest sync;
    - B: ``s[i] <= s[j] + 2^j - 2^i``: slot j is never much older than its index allows;
    - C: ``s[i] >= s[j] + 2^max(i-2, 0)``: distinct slots are spaced exponentially;
    - D: slot 63 holds the earliest sync usable for translation: the first received since
      the upstream offsets last went backwards or, for a store that had to read to the
      end first, the last one of that first read.

    A new sync takes slot 0; walking down, each slot that now violates B is repaired with
    the youngest sync that satisfies B and C there, preferring one the store already
    held (kept for a later slot) over the newcomer, and the walk stops at the first slot
    that still satisfies B. So recent offsets translate closely and old ones through
    syncs spaced ever wider apart.
    """

    def __init__(self, *, initialization_must_read_to_end: bool = False) -> None:
        """A store whose checkpoint task is already past its first read to the end of the
        offset-syncs topic, unless ``initialization_must_read_to_end``.

        Kafka's ``MirrorCheckpointTask.start`` passes ``!checkpointsReadOk`` to
        ``OffsetSyncStore.start``: when the task could not load its previous checkpoints,
        every sync read before the first read to the end replaces the whole store
        (``updateSyncArray``'s ``onlyLoadLastOffset``), so translation starts from the
        latest sync in the topic and never reaches back before it.
        """
        self._slots: list[OffsetSync] = []
        self._only_load_last = initialization_must_read_to_end

    def finish_initial_read(self) -> None:
        """The first read to the end of the offset-syncs topic is done: syncs read from now
        on are spaced into the store instead of replacing it."""
        self._only_load_last = False

    @property
    def slots(self) -> tuple[OffsetSync, ...]:
        """The 64 slots (empty before the first sync)."""
        return tuple(self._slots)

    @property
    def syncs(self) -> tuple[OffsetSync, ...]:
        """The distinct syncs held, newest first."""
        distinct: list[OffsetSync] = []
        for sync in self._slots:
            if not distinct or distinct[-1] is not sync:
                distinct.append(sync)
        return tuple(distinct)

    def update(self, sync: OffsetSync) -> None:
        """Take a sync read from the offset-syncs topic (they arrive in upstream order).

        An upstream offset that goes backwards means the source partition was recreated
        or truncated: every cached mapping is then meaningless and is dropped. So is every
        earlier sync while a store that must read to the end is still on its first read.
        """
        rewound = bool(self._slots) and sync.upstream_offset < self._slots[0].upstream_offset
        if self._only_load_last or not self._slots or rewound:
            self._slots = [sync] * SYNCS_PER_PARTITION
            return
        before = list(self._slots)
        slots = self._slots
        slots[0] = candidate = sync
        taken = 0
        for index in range(1, SYNCS_PER_PARTITION):
            newer = slots[index - 1]
            candidate, taken = _best_kept(slots, before, index, candidate, taken)
            if _recent_enough(newer, slots[index], index - 1, index):
                return
            slots[index] = candidate


def _best_kept(
    slots: list[OffsetSync], before: list[OffsetSync], index: int, candidate: OffsetSync, taken: int
) -> tuple[OffsetSync, int]:
    """The sync to put at ``index`` should it need repair, and how far the walk through
    the previous slots got: a previous sync is promoted when it satisfies B and C there
    (and keeps C towards the slot after), and passed over for good when it duplicates
    the next one or is too close to the newer slot ever to fit."""
    newer = slots[index - 1]
    while True:
        old = before[taken]
        fits_b = _recent_enough(newer, old, index - 1, index)
        fits_c = _spaced(newer, old, index - 1)
        fits_next = index + 1 >= SYNCS_PER_PARTITION or _spaced(old, slots[index + 1], index)
        duplicate = taken + 1 < SYNCS_PER_PARTITION and old is before[taken + 1]
        promote = fits_b and fits_c and fits_next
        if promote:
            candidate = old
        skip = duplicate or not fits_c
        if promote or skip:
            taken += 1
        if not (skip and taken < index):
            return candidate, taken


def _recent_enough(newer: OffsetSync, older: OffsetSync, i: int, j: int) -> bool:
    """Invariant B between slots i < j."""
    bound = older.upstream_offset + (1 << j) - (1 << i)
    return newer is older or bound < 0 or newer.upstream_offset <= bound


def _spaced(newer: OffsetSync, older: OffsetSync, i: int) -> bool:
    """Invariant C between slot i and any later slot."""
    bound = older.upstream_offset + (1 << max(i - 2, 0))
    return newer is older or (bound >= 0 and newer.upstream_offset >= bound)


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
