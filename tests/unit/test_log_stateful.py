"""A Hypothesis state machine drives PartitionLog against a list-of-batches model.

Random leader and follower appends with changing epochs, truncations, rolls (small
segments), high watermark moves, retention, log start moves, compaction and reopen
(clean, crash after a flush, process crash without one). After every step: offsets are
monotonic, reads return exactly the batches appended and not truncated or compacted away
(byte-equal), the epoch cache matches the epochs the batches were appended with, and
every index entry agrees with the log.
"""

from __future__ import annotations

import dataclasses
import itertools
import shutil
import tempfile
from pathlib import Path

from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from mirrorsim.broker.log import LogConfig, PartitionLog
from mirrorsim.broker.log.cleaner import CleaningPlan, clean_segments
from mirrorsim.broker.log.epoch_cache import EpochEntry
from mirrorsim.broker.log.segment import LogSegment
from mirrorsim.protocol.records import RawBatch, Record, build_batch, decode_records, iter_batches

DAY = 86_400_000
CONFIG = LogConfig(
    segment_bytes=600,
    index_interval_bytes=90,
    retention_ms=-1,
    cleanup_policy="compact,delete",
    min_cleanable_dirty_ratio=0.0,
    delete_retention_ms=DAY,
)
Visible = tuple[int, bytes | None, bytes | None]


class PartitionLogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="log-sm-"))
        self.config = CONFIG
        self.log = PartitionLog.open(self.tmp / "t-0", self.config)
        self.model: list[RawBatch] = []
        self.counter = itertools.count()
        self.log_start = 0
        self.first_segment_base = 0
        self.next_offset = 0
        self.epochs: list[EpochEntry] = []
        self.pending: tuple[CleaningPlan, list[LogSegment]] | None = None

    def teardown(self) -> None:
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- helpers ---------------------------------------------------------------------------

    @property
    def latest_epoch(self) -> int:
        return self.epochs[-1].epoch if self.epochs else 0

    def note_epoch(self, epoch: int, offset: int) -> None:
        if not self.epochs or epoch > self.epochs[-1].epoch:
            self.epochs.append(EpochEntry(epoch, offset))

    def new_batch(self, records: int, ts_step: int, tombstone: bool = False) -> RawBatch:
        n = next(self.counter)
        return build_batch(
            [
                Record(
                    i,
                    1_000 + n * ts_step + i,
                    b"k%d" % ((n + i) % 7),
                    None if tombstone and i == records - 1 else b"v%d" % n,
                )
                for i in range(records)
            ]
        )

    def visible_records(self) -> list[Visible]:
        return [
            (r.offset, r.key, r.value)
            for b in self.model
            if b.base_offset >= self.first_segment_base
            for r in decode_records(b)
            if r.offset >= self.log_start
        ]

    def forget_epochs_at_log_end(self) -> None:
        """Truncation (and open) drop epoch entries at or past the LEO, as in Kafka."""
        end = self.log.log_end_offset
        if self.log_start >= end:
            self.epochs = []
        self.epochs = [e for e in self.epochs if e.start_offset < end]

    def forget_batchless_epochs_recovery_dropped(self) -> None:
        """Crash recovery re-learns the epochs from the recovery point on from the batches
        there. An epoch with no batch left in the log (its batches fell below the log
        start, or it opened in an offset gap) cannot be re-learned, so it may be gone."""
        kept = {e.epoch for e in self.log.epoch_cache.epoch_entries}
        batched = {b.partition_leader_epoch for b in self.model if b.last_offset >= self.log_start}
        self.epochs = [e for e in self.epochs if e.epoch in kept or e.epoch in batched]

    # -- rules -----------------------------------------------------------------------------

    @rule(
        sizes=st.lists(st.integers(1, 4), min_size=1, max_size=3),
        epoch_bump=st.integers(0, 2),
        ts_step=st.sampled_from([1, -3, 50]),
        tombstone=st.booleans(),
    )
    def append_as_leader(
        self, sizes: list[int], epoch_bump: int, ts_step: int, tombstone: bool
    ) -> None:
        epoch = self.latest_epoch + epoch_bump
        batches = [self.new_batch(n, ts_step, tombstone) for n in sizes]
        info = self.log.append_as_leader(batches, leader_epoch=epoch)
        assert info.first_offset == self.next_offset
        self.note_epoch(epoch, info.first_offset)
        for batch in batches:
            self.model.append(batch.with_offset_and_epoch(self.next_offset, epoch))
            self.next_offset += batch.records_count

    @rule(
        sizes=st.lists(st.integers(1, 4), min_size=1, max_size=3),
        epoch_bumps=st.lists(st.integers(0, 1), min_size=3, max_size=3),
        gap=st.integers(0, 3),
    )
    def append_as_follower(self, sizes: list[int], epoch_bumps: list[int], gap: int) -> None:
        epoch = self.latest_epoch
        offset = self.next_offset + gap
        batches = []
        for n, bump in zip(sizes, epoch_bumps, strict=False):
            epoch += bump
            batch = self.new_batch(n, 1).with_offset_and_epoch(offset, epoch)
            batches.append(batch)
            self.note_epoch(epoch, offset)
            offset = batch.next_offset
        self.log.append_as_follower(batches, allow_gaps=gap > 0)
        self.model.extend(batches)
        self.next_offset = offset

    @rule(data=st.data())
    def truncate_to(self, data: st.DataObject) -> None:
        target = data.draw(st.integers(self.log_start, self.next_offset + 2))
        event(f"truncated: {self.log.truncate_to(target)}")
        if target >= self.next_offset:
            if target == self.next_offset:
                self.forget_epochs_at_log_end()
            return
        straddling = [b for b in self.model if b.base_offset < target <= b.last_offset]
        self.model = [b for b in self.model if b.last_offset < target]
        self.next_offset = straddling[0].base_offset if straddling else target
        self.forget_epochs_at_log_end()
        if self.next_offset < self.log_start:
            self.model, self.epochs = [], []
            self.log_start = self.first_segment_base = self.next_offset = target

    @rule()
    def roll(self) -> None:
        self.log.roll()

    @rule(fraction=st.floats(0, 1))
    def advance_high_watermark(self, fraction: float) -> None:
        target = self.log_start + int((self.next_offset - self.log_start) * fraction)
        self.log.update_high_watermark(target)

    @rule(data=st.data())
    def increment_log_start(self, data: st.DataObject) -> None:
        target = data.draw(st.integers(self.log_start, self.log.high_watermark))
        self.log.maybe_increment_log_start_offset(target)
        self.log_start = max(self.log_start, target)

    @rule(retention_bytes=st.integers(0, 3_000))
    def retention(self, retention_bytes: int) -> None:
        self.config = dataclasses.replace(self.config, retention_bytes=retention_bytes)
        self.log.update_config(self.config)
        event(f"retention deleted segments: {self.log.delete_old_segments(now_ms=0) > 0}")
        assert self.log.log_start_offset >= self.log_start
        self.log_start = self.log.log_start_offset
        self.first_segment_base = self.log.segments[0].base_offset

    @rule(now_ms=st.sampled_from([0, DAY - 1, DAY, 3 * DAY]), commit_all=st.booleans())
    def compact(self, now_ms: int, commit_all: bool) -> None:
        if commit_all:
            self.log.update_high_watermark(self.log.log_end_offset)
        before = self.visible_records()
        uncleanable = [
            b.data for b in self.model if b.base_offset >= self.log.active_segment.base_offset
        ]
        stats = self.log.compact(now_ms=now_ms)
        event(f"compaction cleaned segments: {stats.segments_cleaned > 0}")
        self.take_compacted_log(before)
        assert [b.data for b in self.model][len(self.model) - len(uncleanable) :] == uncleanable

    def take_compacted_log(self, before: list[Visible]) -> None:
        """The model becomes the compacted log, which keeps a subset of the records seen
        ``before``, among them the latest value of every key (none for a tombstone)."""
        self.model = [b for segment in self.log.segments for b in segment.batches()]
        after = self.visible_records()
        assert set(after) <= set(before)
        latest_before = {key: value for _, key, value in before}
        latest_after = {key: value for _, key, value in after}
        for key, value in latest_before.items():
            if value is not None:
                assert latest_after[key] == value
            else:
                assert latest_after.get(key) is None

    @precondition(lambda self: self.pending is None)
    @rule(now_ms=st.sampled_from([0, DAY, 3 * DAY]))
    def plan_and_clean_on_a_worker(self, now_ms: int) -> None:
        """A broker's cleaning: planned and cleaned now, committed by a later rule, after
        whatever the rules in between did to the log."""
        plan = self.log.plan_cleaning(now_ms=now_ms)
        if plan is not None:
            self.pending = (plan, clean_segments(plan))

    @precondition(lambda self: self.pending is not None)
    @rule()
    def commit_the_cleaning(self) -> None:
        assert self.pending is not None
        plan, copies = self.pending
        self.pending = None
        current = plan.is_current(self.log)
        before = self.visible_records()
        stats = self.log.commit_cleaning(plan, copies)
        event(f"a cleaning from earlier committed: {stats is not None}")
        assert (stats is not None) == current
        assert not list((self.tmp / "t-0").glob("*.cleaned"))
        if stats is not None:
            self.take_compacted_log(before)

    @rule()
    def reopen_cleanly(self) -> None:
        self.log.close()
        self.log = PartitionLog.open(self.tmp / "t-0", self.config)
        self.forget_epochs_at_log_end()

    @precondition(lambda self: self.model)
    @rule()
    def reopen_after_crash(self) -> None:
        self.log.flush()
        for segment in self.log.segments:
            segment.close()
        self.log = PartitionLog.open(self.tmp / "t-0", self.config)
        self.forget_epochs_at_log_end()
        self.forget_batchless_epochs_recovery_dropped()

    @precondition(lambda self: self.model)
    @rule()
    def reopen_after_process_crash(self) -> None:
        """The process dies without a flush: the page cache keeps the appended bytes, but
        truncations the epoch cache has not written yet are lost and must be rebuilt."""
        for segment in self.log.segments:
            segment.close()
        self.log = PartitionLog.open(self.tmp / "t-0", self.config)
        self.forget_epochs_at_log_end()
        self.forget_batchless_epochs_recovery_dropped()

    # -- invariants ------------------------------------------------------------------------

    @invariant()
    def offsets_match_model(self) -> None:
        assert self.log.log_start_offset == self.log_start
        if self.model or self.next_offset == self.log.log_end_offset:
            # After a truncation into a gap the LEO sits past the last batch; a reopen
            # brings it back to the last batch, or to the log start if that is higher.
            last_batch_end = self.model[-1].next_offset if self.model else self.next_offset
            expected_end = max(last_batch_end, self.log_start)
            assert self.log.log_end_offset in (self.next_offset, expected_end), (
                self.log.log_end_offset,
                self.next_offset,
                expected_end,
            )
        self.next_offset = self.log.log_end_offset
        bases = [s.base_offset for s in self.log.segments]
        assert bases == sorted(set(bases))

    @invariant()
    def reads_return_exactly_the_model(self) -> None:
        visible = [
            b
            for b in self.model
            if b.last_offset >= self.log_start and b.base_offset >= self.first_segment_base
        ]
        found: list[RawBatch] = []
        offset = self.log_start
        while offset < self.log.log_end_offset:
            batches = list(iter_batches(self.log.read(offset, 2_000).records))
            if not batches:
                break
            found.extend(batches)
            offset = batches[-1].next_offset
        assert [b.data for b in found] == [b.data for b in visible]
        for earlier, later in itertools.pairwise(found):
            assert later.base_offset > earlier.last_offset

    @invariant()
    def epoch_cache_matches_appended_epochs(self) -> None:
        expected = self.epochs
        covered = [e for e in expected if e.start_offset <= self.log_start]
        if covered:
            expected = [EpochEntry(covered[-1].epoch, self.log_start), *expected[len(covered) :]]
        actual = self.log.epoch_cache.epoch_entries
        live = [b for b in self.model if b.last_offset >= self.log_start]
        # When the log start lies in an offset gap, nothing in the log says whether the first
        # epoch began there or at the first batch, and recovery relearns the latter.
        if (
            expected
            and live
            and live[0].base_offset > expected[0].start_offset
            and actual[:1] == [EpochEntry(expected[0].epoch, live[0].base_offset)]
        ):
            expected = [actual[0], *expected[1:]]
        assert actual == expected

    @invariant()
    def indexes_agree_with_log(self) -> None:
        for segment in self.log.segments:
            headers = list(segment.headers())
            assert sum(h.size for h in headers) == segment.size
            by_position = {h.position: h for h in headers}
            for offset, position in segment.offset_index.entries():
                assert by_position[position].last_offset == offset
            previous = None
            for timestamp, offset in segment.time_index.entries():
                upto = [h.max_timestamp for h in headers if h.base_offset <= offset]
                assert upto and max(upto) == timestamp
                assert previous is None or timestamp > previous
                previous = timestamp


PartitionLogMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=30, deadline=None
)
TestPartitionLog = PartitionLogMachine.TestCase
