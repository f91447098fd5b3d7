"""The broker's log cleaner: Kafka's ``LogCleaner`` with one cleaner thread.

Each pass compacts, one log at a time, every compacted log the broker may clean (see
``broker/log/cleaner.py`` for what a cleaning keeps). The plan and the swap run on the
event loop, which owns the logs; reading the segments and writing their cleaned copies
runs on a worker thread, so a cleaning of a large segment does not stall requests. A log
that changed in between (truncated, trimmed by retention, closed) keeps its segments and
is cleaned at a later pass.

Failures are Kafka's: a file system error takes the partition offline
(KAFKA_STORAGE_ERROR), as a failed append does; any other error (a batch that does not
decode) marks the log uncleanable for as long as the broker holds it, and the other logs
are still cleaned.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Iterable
from typing import Protocol

from mirrorsim.broker.log.cleaner import (
    CleaningAborted,
    CleaningPlan,
    clean_segments,
    discard_cleaned,
)
from mirrorsim.broker.log.partition_log import PartitionLog
from mirrorsim.broker.log.results import CompactionStats
from mirrorsim.broker.log.segment import LogSegment

log = logging.getLogger(__name__)

PartitionKey = tuple[str, int]


class CleanerHost(Protocol):
    """What the cleaner needs of the replica manager."""

    def cleanable_logs(self) -> Iterable[tuple[PartitionKey, PartitionLog]]:
        """The compacted logs that may be cleaned now."""
        ...

    def may_clean(self, key: PartitionKey, partition_log: PartitionLog) -> bool:
        """Whether ``partition_log`` is still the partition's log and may be cleaned."""
        ...

    def take_offline(self, key: PartitionKey, exc: OSError) -> None: ...


class LogCleaner:
    def __init__(self, host: CleanerHost) -> None:
        self._host = host
        self._uncleanable: weakref.WeakSet[PartitionLog] = weakref.WeakSet()

    async def clean(self) -> list[CompactionStats]:
        """One pass over the cleanable logs; the stats of each log it cleaned."""
        cleaned: list[CompactionStats] = []
        for key, partition_log in list(self._host.cleanable_logs()):
            if partition_log in self._uncleanable or not self._host.may_clean(key, partition_log):
                continue
            stats = await self._clean_log(key, partition_log)
            if stats is not None:
                cleaned.append(stats)
        return cleaned

    async def _clean_log(
        self, key: PartitionKey, partition_log: PartitionLog
    ) -> CompactionStats | None:
        try:
            plan = partition_log.plan_cleaning()
        except OSError as exc:
            self._host.take_offline(key, exc)
            return None
        if plan is None:
            return None
        try:
            copies = await self._clean_in_thread(plan)
        except CleaningAborted:
            return None
        except OSError as exc:
            if plan.is_current(partition_log) and self._host.may_clean(key, partition_log):
                self._host.take_offline(key, exc)
            return None
        except Exception:
            if plan.is_current(partition_log):
                log.exception("%s-%d is uncleanable until its log is reopened", *key)
                self._uncleanable.add(partition_log)
            return None
        if not self._host.may_clean(key, partition_log):
            discard_cleaned(copies)
            return None
        try:
            return partition_log.commit_cleaning(plan, copies)
        except OSError as exc:
            self._host.take_offline(key, exc)
            return None

    @staticmethod
    async def _clean_in_thread(plan: CleaningPlan) -> list[LogSegment]:
        """The worker's part. A pass cancelled meanwhile (the broker stops) aborts the
        worker and waits for it, so no thread writes into the log's directory after the
        broker closed its logs."""
        work = asyncio.ensure_future(asyncio.to_thread(clean_segments, plan))
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            plan.abort.set()
            with contextlib.suppress(Exception):
                discard_cleaned(await work)
            raise
