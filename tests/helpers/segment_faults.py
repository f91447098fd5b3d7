"""Faults injected into segment files a broker wrote, for the verification tests.

Each helper rewrites one batch of a real `.log` in place and returns the base offset
where the fault shows. Base offset and partition leader epoch sit before the CRC'd part
of a batch (the CRC32C covers attributes onward), so those two faults leave a batch whose
own CRC still holds: only comparing with the source catches them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mirrorsim.protocol.records import RawBatch
from mirrorsim.protocol.records.raw_batch import iter_batches


def segment_with_batches(partition_dir: Path, count: int) -> Path:
    """The first segment of a partition holding at least ``count`` batches."""
    for segment in sorted(partition_dir.glob("*.log")):
        if len(read_segment(segment)) >= count:
            return segment
    raise AssertionError(f"no segment in {partition_dir} holds {count} batches")


def read_segment(segment: Path) -> list[RawBatch]:
    return list(iter_batches(segment.read_bytes(), allow_partial_tail=False))


def _rewrite_batch(
    segment: Path, index: int, change: Callable[[RawBatch], RawBatch | None]
) -> RawBatch:
    """Replace (or, when ``change`` returns None, drop) the ``index``-th batch."""
    batches = read_segment(segment)
    original = batches[index]
    replacement = change(original)
    batches[index : index + 1] = [] if replacement is None else [replacement]
    segment.write_bytes(b"".join(batch.data for batch in batches))
    return original


def flip_record_byte(segment: Path, index: int) -> RawBatch:
    """Invert the last byte of a batch, inside its records (disk corruption)."""

    def flip(batch: RawBatch) -> RawBatch:
        data = bytearray(batch.data)
        data[-1] ^= 0xFF
        return RawBatch.from_bytes(bytes(data))

    return _rewrite_batch(segment, index, flip)


def drop_batch(segment: Path, index: int) -> RawBatch:
    """Remove a batch and keep every later batch at its offsets: a hole in the log."""
    return _rewrite_batch(segment, index, lambda _: None)


def shift_base_offset(segment: Path, index: int, by: int) -> RawBatch:
    return _rewrite_batch(
        segment, index, lambda batch: batch.with_base_offset(batch.base_offset + by)
    )


def restamp_leader_epoch(segment: Path, index: int, epoch: int) -> RawBatch:
    return _rewrite_batch(segment, index, lambda batch: batch.with_partition_leader_epoch(epoch))
