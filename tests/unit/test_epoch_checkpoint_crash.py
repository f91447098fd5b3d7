"""A crash at any point, with ``leader-epoch-checkpoint`` in any state an unsynced write
can leave, recovers the epoch cache the log's batches describe.

Random leader appends (each at or above the latest epoch, so after a truncation the log
continues with epochs below the ones it dropped), epoch bumps with no append, truncations,
flushes and rolls; then a crash. The checkpoint is left as written, as of its last fsync,
as any unsynced version since, missing, empty, zero-filled or cut short, and on a machine
crash the unflushed tail of the log is cut at a random byte. The reopened log's cache must
equal one built from scratch from the batches it holds, and survive a clean reopen.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

from hypothesis import example, given, settings
from hypothesis import strategies as st

from mirrorsim.broker.log import LogConfig, PartitionLog
from mirrorsim.broker.log import epoch_cache as epoch_cache_module
from mirrorsim.broker.log.checkpoint import read_checkpoint
from mirrorsim.broker.log.epoch_cache import CHECKPOINT_NAME, EpochEntry
from mirrorsim.broker.log.partition_log import RECOVERY_POINT_FILE
from mirrorsim.broker.log.segment import OFFSET_WIDTH
from mirrorsim.protocol.records import Record, build_batch

CONFIG = LogConfig(segment_bytes=700, index_interval_bytes=100)
CHECKPOINT_STATES = ("as_written", "durable", "any_unsynced", "missing", "empty", "zeros", "cut")

operations = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.sampled_from([0, 1, 1, 2]), st.integers(1, 4)),
        st.tuples(st.just("bump"), st.integers(1, 2)),
        st.tuples(st.just("truncate"), st.floats(0, 1)),
        st.tuples(st.just("flush")),
        st.tuples(st.just("roll")),
    ),
    min_size=2,
    max_size=25,
)


@dataclass
class CheckpointWrites:
    """Every content written to the checkpoint, and which of them were fsynced."""

    versions: list[tuple[bytes, bool]] = field(default_factory=list)

    def record(
        self, path: Path, entries: list[tuple[int, ...]], *, sync: bool, deferred: Any = None
    ) -> None:
        assert deferred is None, "a log closed on its own syncs its own files"
        write_checkpoint(path, entries, sync=sync)
        self.versions.append((path.read_bytes(), sync))

    @property
    def durable(self) -> bytes | None:
        synced = [content for content, sync in self.versions if sync]
        return synced[-1] if synced else None

    @property
    def since_durable(self) -> list[bytes | None]:
        last_sync = max((i for i, (_, sync) in enumerate(self.versions) if sync), default=-1)
        return [self.durable] + [content for content, _ in self.versions[last_sync + 1 :]]


write_checkpoint = epoch_cache_module.write_checkpoint


def run(log: PartitionLog, operation: tuple[Any, ...], counter: list[int]) -> None:
    name = operation[0]
    latest = log.latest_epoch or 0
    if name == "append":
        _, step, count = operation
        for _ in range(count):
            counter[0] += 1
            record = Record(0, counter[0], b"k%d" % counter[0], b"v" * 40)
            log.append_as_leader([build_batch([record])], leader_epoch=latest + step)
    elif name == "bump":
        log.epoch_cache.assign(latest + operation[1], log.log_end_offset)
    elif name == "truncate":
        log.truncate_to(int(operation[1] * log.log_end_offset))
    elif name == "flush":
        log.flush()
    else:
        log.roll()


def process_crash(log: PartitionLog) -> None:
    for segment in log.segments:
        segment.close()


def unflushed_spans(log: PartitionLog) -> list[tuple[int, int, int]]:
    """(segment base offset, first byte, size) of each segment's part at or above the
    persisted recovery point: what a machine crash may lose."""
    recovery_point = (read_checkpoint(log.dir / RECOVERY_POINT_FILE, 1) or [(0,)])[0][0]
    spans = []
    for segment in log.segments:
        if segment.next_offset <= recovery_point:
            continue
        first = segment.translate_offset(recovery_point)
        start = first.position if first is not None and segment.base_offset <= recovery_point else 0
        spans.append((segment.base_offset, start, segment.size))
    return spans


def cut_unflushed_tail(directory: Path, spans: list[tuple[int, int, int]], fraction: float) -> None:
    """Lose everything after a random byte of the unflushed spans."""
    at = int(fraction * sum(size - start for _, start, size in spans))
    cut_done = False
    for base, start, size in spans:
        name = f"{base:0{OFFSET_WIDTH}d}"
        if cut_done:
            for path in directory.glob(f"{name}.*"):
                if not path.name.endswith(".snapshot"):
                    path.unlink()
        elif at < size - start:
            with open(directory / f"{name}.log", "r+b") as f:
                f.truncate(start + at)
            cut_done = True
        else:
            at -= size - start


def leave_checkpoint(path: Path, state: str, writes: CheckpointWrites, pick: int) -> None:
    current = path.read_bytes() if path.exists() else b""
    content: bytes | None
    if state == "as_written":
        return
    if state == "durable":
        content = writes.durable
    elif state == "any_unsynced":
        candidates = writes.since_durable
        content = candidates[pick % len(candidates)]
    elif state == "missing":
        content = None
    elif state == "empty":
        content = b""
    elif state == "zeros":
        content = b"\0" * len(current)
    else:
        content = current[: pick % max(len(current), 1)]
    path.unlink(missing_ok=True)
    if content is not None:
        path.write_bytes(content)


def epochs_from_scratch(log: PartitionLog) -> list[EpochEntry]:
    entries: list[EpochEntry] = []
    for batch in log.batches():
        epoch = batch.partition_leader_epoch
        if epoch >= 0 and (not entries or entries[-1].epoch != epoch):
            entries.append(EpochEntry(epoch, batch.base_offset))
    return entries


@settings(max_examples=200, deadline=None)
@example(  # the new epoch's unsynced write is lost; only its batches remember it
    ops=[("append", 0, 2), ("flush",), ("append", 1, 2)],
    state="durable",
    pick=0,
    machine_cut=None,
)
@example(  # after a truncation the log continues below the epoch the checkpoint still has
    ops=[("append", 0, 2), ("append", 2, 2), ("roll",), ("truncate", 0.5), ("append", 1, 2)],
    state="durable",
    pick=0,
    machine_cut=None,
)
@example(  # a bump with no append, durable because a roll followed it
    ops=[("append", 0, 2), ("bump", 1), ("roll",), ("append", 0, 1)],
    state="as_written",
    pick=0,
    machine_cut=0.0,
)
@given(
    ops=operations,
    state=st.sampled_from(CHECKPOINT_STATES),
    pick=st.integers(0, 1_000),
    machine_cut=st.none() | st.floats(0, 1, exclude_max=True),
)
def test_recovered_epoch_cache_is_the_one_the_log_describes(
    ops: list[tuple[Any, ...]], state: str, pick: int, machine_cut: float | None
) -> None:
    writes = CheckpointWrites()
    with (
        tempfile.TemporaryDirectory(prefix="epoch-crash-") as tmp,
        mock.patch.object(epoch_cache_module, "write_checkpoint", writes.record),
    ):
        directory = Path(tmp) / "t-0"
        log = PartitionLog.open(directory, CONFIG)
        counter = [0]
        for operation in ops:
            run(log, operation, counter)
        spans = unflushed_spans(log)
        process_crash(log)
        if machine_cut is not None:
            cut_unflushed_tail(directory, spans, machine_cut)
        leave_checkpoint(directory / CHECKPOINT_NAME, state, writes, pick)

        recovered = PartitionLog.open(directory, CONFIG)
        expected = epochs_from_scratch(recovered)
        assert recovered.epoch_cache.epoch_entries == expected
        recovered.close()
        reopened = PartitionLog.open(directory, CONFIG)
        assert reopened.epoch_cache.epoch_entries == expected
        reopened.close()
