"""One segment: ``<base offset>.log`` plus its ``.index``, ``.timeindex`` and ``.txnindex``.

The ``.log`` file is the batches exactly as appended, back to back. The segment only
reads batch headers (never records), so appends and reads cost the same however the
records inside are compressed.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

import crc32c

from mirrorsim.broker.log.file_handles import FileHandles
from mirrorsim.broker.log.index import CorruptIndexError, OffsetIndex, TimeIndex
from mirrorsim.broker.log.txn_index import TransactionIndex
from mirrorsim.protocol.records.raw_batch import (
    CRC_START,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    RawBatch,
)

OFFSET_WIDTH = 20
_SCAN_CHUNK = 1 << 16
_IOV_MAX = 1024
_MAX_TRANSLATIONS = 64
"""Remembered offset lookups per segment: a few readers per partition, each at one offset."""
_APPEND_STARTS = 8
"""The first batches of a segment's latest appends, kept because a caught-up reader's
next Fetch asks for exactly one of them."""
_INT32_MAX = 2**31 - 1
_OFFSET_AND_LENGTH = struct.Struct(">qi")
_LAST_OFFSET_DELTA = struct.Struct(">i")
NO_TIMESTAMP = -1


def segment_file(directory: Path, base_offset: int, suffix: str) -> Path:
    return directory / f"{base_offset:0{OFFSET_WIDTH}d}{suffix}"


class SegmentArgs(TypedDict):
    """What every segment of one log is opened with."""

    index_interval_bytes: int
    max_index_entries: int
    handles: FileHandles


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """Where a batch sits in the segment and the header fields the log decides on."""

    position: int
    size: int
    base_offset: int
    partition_leader_epoch: int
    crc: int
    attributes: int
    last_offset_delta: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


def parse_header(buf: bytes | memoryview, at: int, position: int) -> BatchHeader:
    (
        base_offset,
        length,
        epoch,
        _magic,
        crc,
        attributes,
        last_offset_delta,
        _base_ts,
        max_ts,
        producer_id,
        producer_epoch,
        base_sequence,
        records_count,
    ) = HEADER.unpack_from(buf, at)
    return BatchHeader(
        position,
        length + LOG_OVERHEAD,
        base_offset,
        epoch,
        crc,
        attributes,
        last_offset_delta,
        max_ts,
        producer_id,
        producer_epoch,
        base_sequence,
        records_count,
    )


@dataclass(frozen=True, slots=True)
class AppendItem:
    """One batch ready for the file: its bytes (possibly in pieces) and index facts."""

    pieces: Sequence[bytes | memoryview]
    size: int
    base_offset: int
    last_offset: int
    max_timestamp: int
    records_count: int


class LogSegment:
    def __init__(
        self,
        directory: Path,
        base_offset: int,
        *,
        index_interval_bytes: int,
        max_index_entries: int,
        handles: FileHandles,
        suffix: str = "",
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self._file = handles.file(
            segment_file(directory, base_offset, ".log" + suffix), create=True
        )
        with self._file as fd:
            self.size = os.fstat(fd).st_size
        self.offset_index = OffsetIndex(
            segment_file(directory, base_offset, ".index" + suffix), base_offset, max_index_entries
        )
        self.time_index = TimeIndex(
            segment_file(directory, base_offset, ".timeindex" + suffix),
            base_offset,
            max_index_entries,
        )
        self.txn_index = TransactionIndex(
            segment_file(directory, base_offset, ".txnindex" + suffix)
        )
        self.next_offset = base_offset
        self.max_timestamp = NO_TIMESTAMP
        self.offset_of_max_timestamp = base_offset
        self.rolling_timestamp: int | None = None
        self._bytes_since_index_entry = 0
        self._translations: dict[int, BatchHeader] = {}
        self._append_starts: dict[int, tuple[int, bytearray]] = {}

    # -- opening -------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        directory: Path,
        base_offset: int,
        *,
        index_interval_bytes: int,
        max_index_entries: int,
        handles: FileHandles,
        suffix: str = "",
    ) -> LogSegment:
        """A new, empty segment with its ``.index`` and ``.timeindex`` on disk at once, as
        Kafka creates them; the ``.txnindex`` appears with the first aborted transaction."""
        segment = cls(
            directory,
            base_offset,
            index_interval_bytes=index_interval_bytes,
            max_index_entries=max_index_entries,
            handles=handles,
            suffix=suffix,
        )
        if segment.size:
            with segment._file as fd:
                os.ftruncate(fd, 0)
            segment.size = 0
        segment.txn_index.delete()
        segment.offset_index.create_file()
        segment.time_index.create_file()
        return segment

    @classmethod
    def load(
        cls,
        directory: Path,
        base_offset: int,
        *,
        index_interval_bytes: int,
        max_index_entries: int,
        handles: FileHandles,
    ) -> LogSegment:
        """Open a segment trusting its indexes; rebuild them if they fail a sanity check."""
        segment = cls(
            directory,
            base_offset,
            index_interval_bytes=index_interval_bytes,
            max_index_entries=max_index_entries,
            handles=handles,
        )
        segment.txn_index = TransactionIndex.load(segment.txn_index.path)
        try:
            segment._load_indexes(max_index_entries)
        except (CorruptIndexError, FileNotFoundError, struct.error):
            segment.recover()
        return segment

    def _load_indexes(self, max_entries: int) -> None:
        """Check the indexes' last entries against the log; their other entries are read
        on first use (``OffsetIndex.open_lazily``)."""
        offset_index = OffsetIndex.open_lazily(
            self.offset_index.path, self.base_offset, max_entries
        )
        time_index = TimeIndex.open_lazily(self.time_index.path, self.base_offset, max_entries)
        last_offset, last_position = offset_index.last_entry
        if last_position > self.size:
            raise CorruptIndexError(f"{offset_index.path} points past the end of the log")
        self.offset_index, self.time_index = offset_index, time_index
        last_time = time_index.last_entry
        if last_time is not None:
            self.max_timestamp, self.offset_of_max_timestamp = last_time
        first = next(self.headers(), None)
        self.rolling_timestamp = first.max_timestamp if first else None
        self.next_offset = self.base_offset
        tail_start = last_position
        for header in self.headers(last_position):
            if (
                len(offset_index)
                and header.position == last_position
                and header.last_offset != last_offset
            ):
                raise CorruptIndexError(f"{offset_index.path} disagrees with the log")
            self._note_batch(header.next_offset, header.max_timestamp, header.last_offset)
        self._bytes_since_index_entry = self.size - tail_start

    def recover(self, max_batch_size: int | None = None) -> int:
        """Re-validate every batch (length and CRC32C), rebuild all indexes, and cut the
        file at the first batch that fails. Returns the number of bytes truncated."""
        self.offset_index.delete()
        self.time_index.delete()
        max_entries = self.offset_index.max_entries
        self.offset_index = OffsetIndex(self.offset_index.path, self.base_offset, max_entries)
        self.time_index = TimeIndex(self.time_index.path, self.base_offset, max_entries)
        self.next_offset = self.base_offset
        self.max_timestamp = NO_TIMESTAMP
        self.offset_of_max_timestamp = self.base_offset
        self.rolling_timestamp = None
        self._bytes_since_index_entry = 0
        position = 0
        while position < self.size:
            batch = self._read_valid_batch(position, max_batch_size)
            if batch is None:
                break
            self._index_batch(position, batch.size, batch.last_offset, batch.max_timestamp)
            position += batch.size
        truncated = self.size - position
        if truncated:
            with self._file as fd:
                os.ftruncate(fd, position)
            self.size = position
            self._forget_positions()
        # The aborts flushed before a crash stay; the log indexes the later ones again
        # when it replays producer state (PartitionLog._load).
        self.txn_index = TransactionIndex.load(self.txn_index.path)
        self.txn_index.truncate_to(self.next_offset)
        self.flush_indexes(fsync=True)
        return truncated

    def _read_valid_batch(self, position: int, max_batch_size: int | None) -> RawBatch | None:
        head = self.read_at(position, HEADER_SIZE)
        if len(head) < HEADER_SIZE:
            return None
        base_offset, length, _epoch, magic, crc = struct.unpack_from(">qiibI", head)
        size = length + LOG_OVERHEAD
        if (
            magic != MAGIC_V2
            or size < HEADER_SIZE
            or position + size > self.size
            or base_offset < self.next_offset
            or (max_batch_size is not None and size > max_batch_size)
        ):
            return None
        data = self.read_at(position, size)
        if len(data) != size or crc32c.crc32c(memoryview(data)[CRC_START:]) != crc:
            return None
        batch = RawBatch.from_bytes(data)
        if batch.last_offset_delta < 0 or batch.last_offset - self.base_offset > _INT32_MAX:
            return None
        return batch

    # -- appending -----------------------------------------------------------------------

    def append(self, items: Sequence[AppendItem]) -> None:
        """Write the batches with as few syscalls as the iovec limit allows, then index.

        The index bookkeeping is ``_index_batch`` unrolled over the batches, with the
        running values kept in locals: it runs once per batch on every append.
        """
        pieces = [piece for item in items for piece in item.pieces]
        with self._file as fd:
            for start in range(0, len(pieces), _IOV_MAX):
                chunk = pieces[start : start + _IOV_MAX]
                written = os.writev(fd, chunk)
                if written != sum(len(p) for p in chunk):
                    _write_remainder(fd, chunk, written)
        if not items:
            return
        if self.rolling_timestamp is None:
            self.rolling_timestamp = items[0].max_timestamp
        position = self.size
        self._remember_append_start(items[0], position)
        since_entry = self._bytes_since_index_entry
        interval = self.index_interval_bytes
        max_timestamp, offset_of_max = self.max_timestamp, self.offset_of_max_timestamp
        for item in items:
            if item.max_timestamp > max_timestamp:
                max_timestamp, offset_of_max = item.max_timestamp, item.last_offset
            if since_entry > interval:
                self.offset_index.append(item.last_offset, position)
                self.time_index.maybe_append(max_timestamp, offset_of_max)
                since_entry = 0
            since_entry += item.size
            position += item.size
        self.max_timestamp, self.offset_of_max_timestamp = max_timestamp, offset_of_max
        self.next_offset = items[-1].last_offset + 1
        self._bytes_since_index_entry = since_entry
        self.size = position

    def _remember_append_start(self, item: AppendItem, position: int) -> None:
        """Keep where an append's first batch went, and its header bytes as written, for
        the reader that asks for it next: a follower or consumer at the log end reads from
        exactly there, and finding it otherwise costs a read of the file through the
        offset index. The header is parsed only if asked for; most appends are not read
        from their start (a mirror's log, with no consumer yet)."""
        head = bytearray()
        for piece in item.pieces:
            head += piece[: HEADER_SIZE - len(head)]
            if len(head) == HEADER_SIZE:
                break
        else:
            return
        starts = self._append_starts
        if len(starts) >= _APPEND_STARTS:
            del starts[next(iter(starts))]
        starts[item.base_offset] = (position, head)

    def _forget_positions(self) -> None:
        self._translations.clear()
        self._append_starts.clear()

    def _index_batch(self, position: int, size: int, last_offset: int, max_timestamp: int) -> None:
        if self.rolling_timestamp is None:
            self.rolling_timestamp = max_timestamp
        self._note_batch(last_offset + 1, max_timestamp, last_offset)
        if self._bytes_since_index_entry > self.index_interval_bytes:
            self.offset_index.append(last_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self._bytes_since_index_entry = 0
        self._bytes_since_index_entry += size

    def _note_batch(self, next_offset: int, max_timestamp: int, last_offset: int) -> None:
        self.next_offset = next_offset
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.offset_of_max_timestamp = last_offset

    def can_hold(self, last_offset: int) -> bool:
        """Whether ``last_offset`` still fits the index's int32 relative offsets."""
        return last_offset - self.base_offset <= _INT32_MAX

    def on_become_inactive(self) -> None:
        """A rolled segment records its final max timestamp, as Kafka does on roll."""
        if self.max_timestamp != NO_TIMESTAMP:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        self.flush_indexes(fsync=False)

    # -- reading -------------------------------------------------------------------------

    @property
    def log_path(self) -> Path:
        return self._file.path

    @property
    def has_open_handle(self) -> bool:
        return self._file.is_open

    def read_at(self, position: int, size: int) -> bytes:
        with self._file as fd:
            return os.pread(fd, size, position)

    def headers(
        self,
        start_position: int = 0,
        end_position: int | None = None,
        *,
        read_size: int = _SCAN_CHUNK,
    ) -> Iterator[BatchHeader]:
        """Batch headers from ``start_position`` on, reading the file ``read_size`` bytes at a
        time (large for scans; lookups that stop early ask for less)."""
        end = self.size if end_position is None else end_position
        position = start_position
        while position + HEADER_SIZE <= end:
            chunk = self.read_at(position, min(read_size, end - position))
            at = 0
            while at + HEADER_SIZE <= len(chunk):
                header = parse_header(chunk, at, position + at)
                if header.size < HEADER_SIZE or header.position + header.size > end:
                    return
                yield header
                at += header.size
            position += at

    def batches(self, start_position: int = 0) -> Iterator[RawBatch]:
        for header in self.headers(start_position):
            yield RawBatch.from_bytes(self.read_at(header.position, header.size))

    def translate_offset(self, offset: int) -> BatchHeader | None:
        """The first batch whose last offset is ≥ ``offset``.

        Found batches are remembered until the file is cut: a fetcher whose partition got
        no room in a size-limited Fetch asks for the same offset again in the next one,
        and appends never move a batch that is already written.
        """
        start = self._append_starts.get(offset)
        if start is not None:
            return parse_header(start[1], 0, start[0])
        known = self._translations.get(offset)
        if known is not None:
            return known
        _, position = self.offset_index.lookup(offset)
        read_size = self.index_interval_bytes + HEADER_SIZE
        for header in self.headers(position, read_size=read_size):
            if header.last_offset >= offset:
                if len(self._translations) >= _MAX_TRANSLATIONS:
                    self._translations.clear()
                self._translations[offset] = header
                return header
        return None

    def read(
        self, start_offset: int, max_bytes: int, *, max_offset: int | None, min_one_batch: bool
    ) -> tuple[bytes, int, int] | None:
        """Whole batches from the batch holding ``start_offset``: (bytes, their base offset,
        the offset after the last of them).

        The end is found without walking every header of the read: the segment's end is a
        batch boundary, ``max_offset`` is cut at the batch the offset index leads to, and a
        byte limit inside the segment is walked back only from the nearest index entry,
        in a read of that tail alone, so the batches are read once at their final length
        instead of being read long and copied short.
        """
        first = self.translate_offset(start_offset)
        if first is None or (max_offset is not None and first.last_offset >= max_offset):
            return None
        if first.size > max_bytes:
            if not min_one_batch:
                return None
            return self.read_at(first.position, first.size), first.base_offset, first.next_offset
        limit = min(first.position + max_bytes, self.size)
        if max_offset is not None and self.next_offset > max_offset:
            stop = self.translate_offset(max_offset)
            if stop is not None:
                limit = min(limit, stop.position)
        if limit == self.size:
            data = self.read_at(first.position, limit - first.position)
            return data, first.base_offset, self.next_offset
        walk_from = limit
        while True:
            walk_from = max(self.offset_index.position_below(walk_from), first.position)
            end, next_offset = _whole_batches_end(self.read_at(walk_from, limit - walk_from))
            if next_offset is not None:
                data = self.read_at(first.position, walk_from + end - first.position)
                return data, first.base_offset, next_offset

    # -- truncation, flushing, lifecycle ---------------------------------------------------

    def truncate_to(self, offset: int) -> int:
        """Remove every batch whose last offset is ≥ ``offset``; returns bytes removed."""
        first_removed = self.translate_offset(offset)
        if first_removed is None:
            return 0
        position = first_removed.position
        removed = self.size - position
        with self._file as fd:
            os.ftruncate(fd, position)
        self.size = position
        self._forget_positions()
        self.offset_index.truncate_to_position(position)
        self.time_index.truncate_to_offset(first_removed.base_offset)
        self.txn_index.truncate_to(first_removed.base_offset)
        self._rescan_after_truncation()
        return removed

    def _rescan_after_truncation(self) -> None:
        self.next_offset = self.base_offset
        self.max_timestamp = NO_TIMESTAMP
        self.offset_of_max_timestamp = self.base_offset
        self.rolling_timestamp = None
        _, last_position = self.offset_index.last_entry
        for header in self.headers():
            if self.rolling_timestamp is None:
                self.rolling_timestamp = header.max_timestamp
            self._note_batch(header.next_offset, header.max_timestamp, header.last_offset)
        self._bytes_since_index_entry = (
            self.size - last_position if len(self.offset_index) else self.size
        )

    def largest_timestamp(self) -> int:
        """The newest record timestamp, or the file's mtime when no batch carries one."""
        if self.max_timestamp != NO_TIMESTAMP:
            return self.max_timestamp
        with self._file as fd:
            return int(os.fstat(fd).st_mtime * 1000)

    def flush(self) -> None:
        with self._file as fd:
            os.fsync(fd)
        self.flush_indexes(fsync=True)

    def flush_indexes(self, *, fsync: bool) -> None:
        self.offset_index.flush(fsync=fsync)
        self.time_index.flush(fsync=fsync)
        self.txn_index.flush(fsync=fsync)

    def close(self) -> None:
        """Closing records the final max timestamp in the time index, as Kafka does."""
        if self.max_timestamp != NO_TIMESTAMP:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        self.flush_indexes(fsync=False)
        self._file.close()

    def delete(self) -> None:
        self._file.close()
        for index in (self.offset_index, self.time_index, self.txn_index):
            index.delete()
        self.log_path.unlink(missing_ok=True)

    def swap_in(self, cleaned: LogSegment) -> LogSegment:
        """Replace this segment's files by ``cleaned`` (same base offset, already flushed
        to disk), crash-safely.

        The old indexes are removed first and the log file is replaced atomically, so a
        crash at any point leaves a log file with either its own indexes or none (which
        are then rebuilt on open). The aborted-transaction index carries over unchanged.
        """
        self.offset_index.delete()
        self.time_index.delete()
        cleaned._file.rename(self.log_path)
        cleaned.offset_index.rename(self.offset_index.path)
        cleaned.time_index.rename(self.time_index.path)
        cleaned.txn_index = self.txn_index
        self._file.close()
        return cleaned


def _write_remainder(fd: int, chunk: Sequence[bytes | memoryview], written: int) -> None:
    rest = b"".join(bytes(p) for p in chunk)[written:]
    while rest:
        rest = rest[os.write(fd, rest) :]


def _whole_batches_end(data: bytes) -> tuple[int, int | None]:
    """(length of the prefix of ``data`` made of whole batches, the offset after them);
    ``data`` starts at a batch boundary. None when not even its first batch is whole.

    A read from the first batch of a segment read always succeeds: it is whole by
    construction.
    """
    end, next_offset = 0, None
    while end + HEADER_SIZE <= len(data):
        base_offset, length = _OFFSET_AND_LENGTH.unpack_from(data, end)
        size = length + LOG_OVERHEAD
        if end + size > len(data):
            break
        next_offset = base_offset + _LAST_OFFSET_DELTA.unpack_from(data, end + 23)[0] + 1
        end += size
    return end, next_offset
