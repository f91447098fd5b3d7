"""The broker's budget of open segment files: one LRU of descriptors for all its logs.

A broker must not need a descriptor per segment: with tens of thousands of partitions it
would run out of them (``RLIMIT_NOFILE``) long before memory. Every segment's ``.log``
file is a ``PooledFile`` of one ``FileHandles`` registry, opened on first use and closed
again when it is the least recently used of more than ``budget`` open files. The indexes
need no descriptor between uses: they are read whole on load and appended to by an
open-write-close on flush.

A use pins the file for its duration (``with pooled as fd:``), so a handle is never
closed underneath a reader and its number never reused for another file mid-read: logs
are opened on worker threads while the event loop reads others, hence the lock. When the
budget is all pinned, a use opens one more rather than wait; pins last one system call.

Running out of descriptors anyway (sockets took them) closes every idle handle and tries
once more; failing again raises ``StorageError``, which a request answers with Kafka's
``KAFKA_STORAGE_ERROR``.
"""

from __future__ import annotations

import errno
import os
import resource
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from mirrorsim.broker.log.errors import StorageError

BUDGET_FRACTION = 0.5
"""The share of the descriptor limit given to segment files; the rest is left for client
and replication sockets, the metadata database and files opened for a moment."""
MIN_BUDGET = 8
OUT_OF_DESCRIPTORS = frozenset({errno.EMFILE, errno.ENFILE})
_REOPEN_FLAGS = os.O_RDWR | os.O_APPEND


def is_out_of_descriptors(exc: BaseException) -> bool:
    """Whether ``exc`` is the process (EMFILE) or the system (ENFILE) out of descriptors."""
    return isinstance(exc, OSError) and exc.errno in OUT_OF_DESCRIPTORS


@dataclass(frozen=True, slots=True)
class DescriptorLimit:
    """The process's ``RLIMIT_NOFILE`` after raising it, and the segment files' share."""

    soft: int
    hard: int
    budget: int


def raise_descriptor_limit() -> DescriptorLimit:
    """Raise the soft ``RLIMIT_NOFILE`` to the hard one (what an operator allowed) and
    size the budget from it. An unlimited hard limit keeps the soft one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return DescriptorLimit(soft, hard, budget_for(soft))


def budget_for(limit: int) -> int:
    return max(MIN_BUDGET, int(limit * BUDGET_FRACTION))


class PooledFile:
    """One file of a ``FileHandles`` registry; ``with pooled as fd:`` pins it open."""

    __slots__ = ("_handles", "_pins", "fd", "path")

    def __init__(self, handles: FileHandles, path: Path) -> None:
        self._handles = handles
        self.path = path
        self.fd = -1
        self._pins = 0

    def __enter__(self) -> int:
        return self._handles.pin(self)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._handles.unpin(self)

    @property
    def is_open(self) -> bool:
        return self.fd >= 0

    def rename(self, path: Path) -> None:
        """Move the file; an open handle keeps pointing at it."""
        os.replace(self.path, path)
        self.path = path

    def close(self) -> None:
        """Close the handle now (the segment is closed or deleted); a later use reopens."""
        self._handles.forget(self)


class FileHandles:
    """At most ``budget`` idle open files, least recently used closed first."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._lock = threading.Lock()
        self._open: OrderedDict[PooledFile, None] = OrderedDict()

    @classmethod
    def for_process_limit(cls) -> FileHandles:
        """A registry sized from the current soft ``RLIMIT_NOFILE``."""
        return cls(budget_for(resource.getrlimit(resource.RLIMIT_NOFILE)[0]))

    def file(self, path: Path, *, create: bool = False) -> PooledFile:
        """A pooled file at ``path``; ``create`` makes it now (empty) if it is missing."""
        pooled = PooledFile(self, path)
        if create:
            with self._lock:
                self._open_locked(pooled, os.O_CREAT)
        return pooled

    @property
    def open_count(self) -> int:
        return len(self._open)

    def pin(self, pooled: PooledFile) -> int:
        with self._lock:
            if pooled.fd >= 0:
                self._open.move_to_end(pooled)
            else:
                self._open_locked(pooled, 0)
            pooled._pins += 1
            return pooled.fd

    def unpin(self, pooled: PooledFile) -> None:
        with self._lock:
            pooled._pins -= 1

    def forget(self, pooled: PooledFile) -> None:
        with self._lock:
            if pooled.fd >= 0:
                self._close_locked(pooled)

    def close_idle(self) -> int:
        """Close every open file nobody is using; returns how many were closed."""
        with self._lock:
            return self._close_idle_locked(keep=0)

    def _open_locked(self, pooled: PooledFile, extra_flags: int) -> None:
        self._close_idle_locked(keep=self.budget - 1)
        try:
            fd = os.open(pooled.path, _REOPEN_FLAGS | extra_flags, 0o644)
        except OSError as exc:
            if not is_out_of_descriptors(exc):
                raise
            self._close_idle_locked(keep=0)
            try:
                fd = os.open(pooled.path, _REOPEN_FLAGS | extra_flags, 0o644)
            except OSError as again:
                if not is_out_of_descriptors(again):
                    raise
                raise StorageError(f"cannot open {pooled.path}: {again.strerror}") from again
        pooled.fd = fd
        self._open[pooled] = None

    def _close_idle_locked(self, *, keep: int) -> int:
        """Close the least recently used unpinned files until at most ``keep`` are open."""
        excess = len(self._open) - keep
        if excess <= 0:
            return 0
        victims = []
        for pooled in self._open:
            if pooled._pins == 0:
                victims.append(pooled)
                if len(victims) == excess:
                    break
        for pooled in victims:
            self._close_locked(pooled)
        return len(victims)

    def _close_locked(self, pooled: PooledFile) -> None:
        del self._open[pooled]
        fd, pooled.fd = pooled.fd, -1
        os.close(fd)
