"""All partition logs of one broker data directory, one ``<topic>-<partition>`` dir each.

Logs are opened on demand with the config the caller passes (topic configs live in the
metadata store, not here); ``on_disk_partitions`` tells the broker what exists at start.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from mirrorsim.broker.log.config import LogConfig
from mirrorsim.broker.log.file_handles import FileHandles
from mirrorsim.broker.log.partition_log import PartitionLog
from mirrorsim.broker.log.shutdown_sync import ShutdownSync

logger = logging.getLogger(__name__)


def partition_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def parse_partition_dir_name(name: str) -> tuple[str, int] | None:
    topic, sep, partition = name.rpartition("-")
    if not sep or not topic or not partition.isdigit():
        return None
    return topic, int(partition)


class LogManager:
    def __init__(
        self,
        data_dir: Path,
        *,
        clock: Callable[[], float] = time.time,
        handles: FileHandles | None = None,
    ) -> None:
        """``handles`` is the broker's descriptor budget shared by all its logs (sized from
        the current ``RLIMIT_NOFILE`` when not given)."""
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._clock = clock
        self.handles = handles or FileHandles.for_process_limit()
        self._logs: dict[tuple[str, int], PartitionLog] = {}
        self._opening: dict[tuple[str, int], threading.Lock] = {}
        """One lock per partition whose log a thread is opening (see ``get_or_create``)."""
        self._opening_guard = threading.Lock()

    def on_disk_partitions(self) -> list[tuple[str, int]]:
        found = []
        for child in sorted(self.data_dir.iterdir()):
            parsed = parse_partition_dir_name(child.name) if child.is_dir() else None
            if parsed is not None:
                found.append(parsed)
        return found

    def get_or_create(
        self,
        topic: str,
        partition: int,
        config: LogConfig,
        topic_id: uuid.UUID | None = None,
    ) -> PartitionLog:
        """The partition's log, opened (or created) on first use.

        Safe to call from several worker threads at once for the same partition: a
        metadata refresh cancelled while its thread opens a log leaves that thread running,
        and the next refresh opens the partition again. The later caller waits for the
        open in progress and gets the same log, never a second one on the same files.
        """
        key = (topic, partition)
        log = self._logs.get(key)
        if log is not None:
            return log
        with self._opening_guard:
            opening = self._opening.setdefault(key, threading.Lock())
        with opening:
            log = self._logs.get(key)
            if log is None:
                log = PartitionLog.open(
                    self.data_dir / partition_dir_name(topic, partition),
                    config,
                    topic_id=topic_id,
                    clock=self._clock,
                    handles=self.handles,
                )
                self._logs[key] = log
        with self._opening_guard:
            self._opening.pop(key, None)
        return log

    def get(self, topic: str, partition: int) -> PartitionLog | None:
        return self._logs.get((topic, partition))

    def delete(self, topic: str, partition: int) -> None:
        log = self._logs.pop((topic, partition), None)
        if log is not None:
            log.delete()
        else:
            shutil.rmtree(self.data_dir / partition_dir_name(topic, partition), ignore_errors=True)

    def all_logs(self) -> dict[tuple[str, int], PartitionLog]:
        return dict(self._logs)

    def close(self) -> None:
        """Close every log with one sync of the file system for all of them
        (``ShutdownSync``); a log that cannot be closed (out of descriptors, disk error)
        is reported in one line and left without its clean-shutdown marker, so the next
        start recovers it from its segments, and the others still close."""
        self.handles.close_idle()
        shutdown = ShutdownSync()
        closed: dict[tuple[str, int], PartitionLog] = {}
        for key, log in self._logs.items():
            try:
                log.close_deferred(shutdown.for_owner(key))
            except OSError as exc:
                _not_closed(key, exc)
            else:
                closed[key] = log
        self._logs.clear()
        try:
            failed = shutdown.commit()
        except OSError as exc:
            logger.warning("logs not closed cleanly: the file system sync failed: %s", exc)
            return
        for key, log in closed.items():
            if key in failed:
                _not_closed(key, failed[key])
                continue
            try:
                log.mark_clean_shutdown()
            except OSError as exc:
                _not_closed(key, exc)


def _not_closed(key: tuple[str, int], exc: OSError) -> None:
    logger.warning("log %s-%d not closed cleanly: %s", key[0], key[1], exc)
