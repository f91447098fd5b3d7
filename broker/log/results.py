"""What the log's operations report back to the replica manager and the handlers."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class AppendOrigin(enum.Enum):
    """Who appends as leader: clients may not write control batches, coordinators may,
    and only client retries are checked for duplicates."""

    CLIENT = "client"
    COORDINATOR = "coordinator"


@dataclass(frozen=True, slots=True)
class AppendInfo:
    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time_ms: int
    log_start_offset: int
    batch_count: int
    record_count: int
    size_bytes: int


@dataclass(frozen=True, slots=True)
class ReadResult:
    """Whole raw batches, back to back, plus the log's offsets at the time of the read.

    ``first_offset`` is the base offset of the first batch (it can be below the requested
    offset: batches are never split), or the requested offset when nothing was read;
    ``next_offset`` is the offset after the last batch read (the requested offset when
    nothing was read), known from the read itself, so callers need not parse the bytes.
    """

    records: bytes
    first_offset: int
    next_offset: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    log_end_offset: int


@dataclass(frozen=True, slots=True)
class TimestampOffset:
    timestamp: int
    offset: int
    leader_epoch: int | None


@dataclass(frozen=True, slots=True)
class CompactionStats:
    segments_cleaned: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_retained: int = 0
    tombstones_removed: int = 0
    aborted_records_removed: int = 0
    markers_removed: int = 0
