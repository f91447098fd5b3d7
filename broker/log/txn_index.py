"""The ``.txnindex`` aborted-transaction index of a segment, in Kafka's byte layout.

Each entry is 34 bytes: version int16 (0), producerId int64, firstOffset int64,
lastOffset int64 (the ABORT marker's offset), lastStableOffset int64. A READ_COMMITTED
Fetch returns the entries overlapping the fetched range so consumers can drop the
aborted records. The file is only created once a transaction aborts in the segment.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

TXN_ENTRY = struct.Struct(">hqqqq")
TXN_INDEX_VERSION = 0


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """What a Fetch response reports: the producer and the first offset of its aborted txn."""

    producer_id: int
    first_offset: int


@dataclass(frozen=True, slots=True)
class CompletedAbort:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        return TXN_ENTRY.pack(
            TXN_INDEX_VERSION,
            self.producer_id,
            self.first_offset,
            self.last_offset,
            self.last_stable_offset,
        )


@dataclass(frozen=True, slots=True)
class TxnIndexSearch:
    """What one segment's index holds for a fetch; ``complete`` ends the search."""

    aborted: list[CompletedAbort]
    complete: bool


class TransactionIndex:
    def __init__(self, path: Path, entries: list[CompletedAbort] | None = None) -> None:
        self.path = path
        self._entries: list[CompletedAbort] = list(entries or [])
        self._unflushed = 0

    @classmethod
    def load(cls, path: Path) -> TransactionIndex:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return cls(path)
        whole = len(data) - len(data) % TXN_ENTRY.size
        entries = [
            CompletedAbort(pid, first, last, lso)
            for version, pid, first, last, lso in TXN_ENTRY.iter_unpack(data[:whole])
            if version == TXN_INDEX_VERSION
        ]
        return cls(path, entries)

    @property
    def entries(self) -> list[CompletedAbort]:
        return list(self._entries)

    def append(self, entry: CompletedAbort) -> None:
        self._entries.append(entry)
        self._unflushed += 1

    def search(self, start_offset: int, upper_offset: int) -> TxnIndexSearch:
        """Kafka's ``TransactionIndex.collectAbortedTxns``: the entries overlapping
        [start_offset, upper_offset), and whether the search may stop here.

        An entry lives in the segment of its ABORT marker, which can be far after the
        fetched range, so a fetch has to read the indexes of later segments too. It may
        stop at the first entry whose recorded LSO reaches ``upper_offset``: when that
        abort completed, no transaction that began before ``upper_offset`` was still
        open, so every later entry's transaction begins at or after it.
        """
        found = []
        for e in self._entries:
            if e.last_offset >= start_offset and e.first_offset < upper_offset:
                found.append(e)
            if e.last_stable_offset >= upper_offset:
                return TxnIndexSearch(found, complete=True)
        return TxnIndexSearch(found, complete=False)

    def truncate_to(self, offset: int) -> None:
        kept = [e for e in self._entries if e.last_offset < offset]
        if len(kept) != len(self._entries):
            self._entries = kept
            self._rewrite()

    def flush(self, *, fsync: bool = True) -> None:
        if not self._unflushed:
            return
        tail = self._entries[len(self._entries) - self._unflushed :]
        with open(self.path, "ab") as f:
            f.write(b"".join(e.encode() for e in tail))
            f.flush()
            if fsync:
                os.fsync(f.fileno())
        self._unflushed = 0

    def rename(self, path: Path) -> None:
        if self.path.exists():
            os.replace(self.path, path)
        self.path = path

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)

    def _rewrite(self) -> None:
        self._unflushed = 0
        if not self._entries:
            self.path.unlink(missing_ok=True)
            return
        self.path.write_bytes(b"".join(e.encode() for e in self._entries))
