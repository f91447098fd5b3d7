"""The sparse ``.index`` and ``.timeindex`` files of a segment, in Kafka's byte layout.

``.index``: 8-byte entries (offset relative to the segment base int32, file position
int32). ``.timeindex``: 12-byte entries (timestamp int64, relative offset int32). Both
are big-endian and strictly increasing. Entries are kept in memory for lookups and
appended to the file lazily: a flush writes them, and recovery rebuilds any index of a
segment that was not flushed, so an index never has to be trusted beyond the recovery
point.

An index opened from disk (``open_lazily``) reads only its last entry, which is what
opening a segment checks against the log; the entries are read on the first lookup,
append or cut. Most segments of a broker with many partitions are never looked up, so
their indexes cost no memory. An index whose entries then fail their check is replaced
by an empty one: a sparse index may be empty (a lookup then scans the segment from its
start), and a wrong entry would misplace reads.
"""

from __future__ import annotations

import bisect
import logging
import os
import struct
from array import array
from pathlib import Path
from typing import ClassVar, Self

OFFSET_ENTRY = struct.Struct(">ii")
TIME_ENTRY = struct.Struct(">qi")

log = logging.getLogger(__name__)


class CorruptIndexError(ValueError):
    pass


class _EntryFile:
    """An append-only file of fixed-size entries with an unflushed tail kept in memory."""

    def __init__(self, path: Path, entry_size: int) -> None:
        self.path = path
        self._entry_size = entry_size
        self._pending = bytearray()
        self._on_disk = 0

    def read_all(self) -> bytes:
        data = self.path.read_bytes()
        if len(data) % self._entry_size:
            raise CorruptIndexError(f"{self.path}: size {len(data)} is not whole entries")
        self._on_disk = len(data)
        return data

    def read_last(self) -> bytes:
        """The file's last entry (empty for an empty file); notes its size."""
        with open(self.path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size % self._entry_size:
                raise CorruptIndexError(f"{self.path}: size {size} is not whole entries")
            self._on_disk = size
            if not size:
                return b""
            f.seek(size - self._entry_size)
            return f.read(self._entry_size)

    @property
    def entries_on_disk(self) -> int:
        return self._on_disk // self._entry_size

    def append(self, entry: bytes) -> None:
        self._pending += entry

    def rewrite(self, data: bytes) -> None:
        self._pending = bytearray()
        with open(self.path, "wb") as f:
            f.write(data)
        self._on_disk = len(data)

    def flush(self, *, fsync: bool) -> None:
        if not self._pending and not fsync:
            return
        with open(self.path, "ab") as f:
            if f.tell() != self._on_disk:
                f.truncate(self._on_disk)
            f.write(self._pending)
            f.flush()
            if fsync:
                os.fsync(f.fileno())
        self._on_disk += len(self._pending)
        self._pending = bytearray()

    def rename(self, path: Path) -> None:
        if self.path.exists():
            os.replace(self.path, path)
        self.path = path

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)


class _SparseIndex:
    """What the offset and time indexes share: the entry file, lazy loading and the
    file's lifecycle. Each keeps its columns of entries; both have ``_offsets``."""

    ENTRY: ClassVar[struct.Struct]

    def __init__(self, path: Path, base_offset: int, max_entries: int) -> None:
        self.base_offset = base_offset
        self.max_entries = max_entries
        self._file = _EntryFile(path, self.ENTRY.size)
        self._offsets = array("q")
        self._last_on_disk: tuple[int, int] | None = None
        """The last entry while the entries are still on disk only (``open_lazily``)."""

    @classmethod
    def load(cls, path: Path, base_offset: int, max_entries: int) -> Self:
        index = cls(path, base_offset, max_entries)
        index._read_entries(index._file.read_all())
        return index

    def _read_entries(self, data: bytes) -> None:
        raise NotImplementedError

    def _clear_entries(self) -> None:
        raise NotImplementedError

    def _loaded(self) -> None:
        """Read the entries of an index opened lazily (see the module docstring)."""
        if self._last_on_disk is None:
            return
        self._last_on_disk = None
        try:
            self._read_entries(self._file.read_all())
        except (CorruptIndexError, OSError) as exc:
            log.warning("%s: %s; the index is rebuilt empty", self.path, exc)
            self._clear_entries()
            self._file.rewrite(b"")

    @property
    def is_loaded(self) -> bool:
        return self._last_on_disk is None

    @property
    def path(self) -> Path:
        return self._file.path

    def __len__(self) -> int:
        if self._last_on_disk is not None:
            return self._file.entries_on_disk
        return len(self._offsets)

    @property
    def is_full(self) -> bool:
        return len(self) >= self.max_entries

    def flush(self, *, fsync: bool = True) -> None:
        self._file.flush(fsync=fsync)

    def create_file(self) -> None:
        """An empty index file on disk, as Kafka creates one with its segment."""
        self._file.rewrite(b"")

    def rename(self, path: Path) -> None:
        self._file.rename(path)

    def delete(self) -> None:
        self._file.delete()


class OffsetIndex(_SparseIndex):
    """Maps offsets to file positions: each entry is a batch's last offset and its position."""

    ENTRY = OFFSET_ENTRY

    def __init__(self, path: Path, base_offset: int, max_entries: int) -> None:
        super().__init__(path, base_offset, max_entries)
        self._positions = array("q")

    @classmethod
    def open_lazily(cls, path: Path, base_offset: int, max_entries: int) -> OffsetIndex:
        index = cls(path, base_offset, max_entries)
        last = index._file.read_last()
        if last:
            relative, position = OFFSET_ENTRY.unpack(last)
            if relative < 0 or position < 0:
                raise CorruptIndexError(f"{path}: negative entry")
            index._last_on_disk = (base_offset + relative, position)
        return index

    def _read_entries(self, data: bytes) -> None:
        for relative, position in OFFSET_ENTRY.iter_unpack(data):
            offset = self.base_offset + relative
            if self._offsets and (offset <= self._offsets[-1] or position <= self._positions[-1]):
                raise CorruptIndexError(f"{self.path}: entries are not increasing")
            if relative < 0 or position < 0:
                raise CorruptIndexError(f"{self.path}: negative entry")
            self._offsets.append(offset)
            self._positions.append(position)

    def _clear_entries(self) -> None:
        del self._offsets[:]
        del self._positions[:]

    @property
    def last_entry(self) -> tuple[int, int]:
        if self._last_on_disk is not None:
            return self._last_on_disk
        if not self._offsets:
            return self.base_offset, 0
        return self._offsets[-1], self._positions[-1]

    def entries(self) -> list[tuple[int, int]]:
        self._loaded()
        return list(zip(self._offsets, self._positions, strict=True))

    def append(self, offset: int, position: int) -> None:
        self._loaded()
        if self._offsets and offset <= self._offsets[-1]:
            return
        self._offsets.append(offset)
        self._positions.append(position)
        self._file.append(OFFSET_ENTRY.pack(offset - self.base_offset, position))

    def lookup(self, offset: int) -> tuple[int, int]:
        """The entry with the largest offset ≤ ``offset``, else (base offset, position 0)."""
        self._loaded()
        slot = bisect.bisect_right(self._offsets, offset) - 1
        if slot < 0:
            return self.base_offset, 0
        return self._offsets[slot], self._positions[slot]

    def position_below(self, position: int) -> int:
        """The largest indexed batch position < ``position`` (0, the first batch, if none)."""
        self._loaded()
        slot = bisect.bisect_left(self._positions, position) - 1
        return self._positions[slot] if slot >= 0 else 0

    def truncate_to_position(self, position: int) -> None:
        """Drop the entries that point at or beyond ``position`` (the file was cut there)."""
        self._loaded()
        keep = bisect.bisect_left(self._positions, position)
        if keep == len(self._positions):
            return
        del self._offsets[keep:]
        del self._positions[keep:]
        self._file.rewrite(
            b"".join(
                OFFSET_ENTRY.pack(o - self.base_offset, p)
                for o, p in zip(self._offsets, self._positions, strict=True)
            )
        )


class TimeIndex(_SparseIndex):
    """Maps timestamps to offsets: (largest timestamp so far, the offset that carried it)."""

    ENTRY = TIME_ENTRY

    def __init__(self, path: Path, base_offset: int, max_entries: int) -> None:
        super().__init__(path, base_offset, max_entries)
        self._timestamps = array("q")

    @classmethod
    def open_lazily(cls, path: Path, base_offset: int, max_entries: int) -> TimeIndex:
        index = cls(path, base_offset, max_entries)
        last = index._file.read_last()
        if last:
            timestamp, relative = TIME_ENTRY.unpack(last)
            index._last_on_disk = (timestamp, base_offset + relative)
        return index

    def _read_entries(self, data: bytes) -> None:
        for timestamp, relative in TIME_ENTRY.iter_unpack(data):
            offset = self.base_offset + relative
            if self._offsets and (timestamp <= self._timestamps[-1] or offset < self._offsets[-1]):
                raise CorruptIndexError(f"{self.path}: entries are not increasing")
            self._timestamps.append(timestamp)
            self._offsets.append(offset)

    def _clear_entries(self) -> None:
        del self._timestamps[:]
        del self._offsets[:]

    @property
    def last_entry(self) -> tuple[int, int] | None:
        """(timestamp, offset) of the last entry, None when empty."""
        if self._last_on_disk is not None:
            return self._last_on_disk
        if not self._offsets:
            return None
        return self._timestamps[-1], self._offsets[-1]

    def entries(self) -> list[tuple[int, int]]:
        self._loaded()
        return list(zip(self._timestamps, self._offsets, strict=True))

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Add an entry only when the timestamp grows, keeping the file strictly increasing."""
        last = self.last_entry
        if last is not None and (timestamp <= last[0] or offset < last[1]):
            return
        self._loaded()
        if self._timestamps and timestamp <= self._timestamps[-1]:
            return
        if self._offsets and offset < self._offsets[-1]:
            return
        self._timestamps.append(timestamp)
        self._offsets.append(offset)
        self._file.append(TIME_ENTRY.pack(timestamp, offset - self.base_offset))

    def lookup_before(self, timestamp: int) -> int:
        """An offset from which a scan finds the first record at or after ``timestamp``.

        Every record up to an entry's offset has a timestamp ≤ the entry's, so the last
        entry strictly below ``timestamp`` is a safe place to start.
        """
        self._loaded()
        slot = bisect.bisect_left(self._timestamps, timestamp) - 1
        return self._offsets[slot] if slot >= 0 else self.base_offset

    def truncate_to_offset(self, offset: int) -> None:
        self._loaded()
        keep = bisect.bisect_left(self._offsets, offset)
        if keep == len(self._offsets):
            return
        del self._timestamps[keep:]
        del self._offsets[keep:]
        self._file.rewrite(
            b"".join(
                TIME_ENTRY.pack(t, o - self.base_offset)
                for t, o in zip(self._timestamps, self._offsets, strict=True)
            )
        )
