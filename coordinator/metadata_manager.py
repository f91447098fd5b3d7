"""MirrorMetadataManager: the periodic topic, config, consumer group offset and ACL sync of
every mirror this broker is the metadata coordinator of.

Theory of operation. Each mirror has exactly one metadata coordinator in the destination
cluster: the leader of ``__mirror_state`` partition ``metadata_coordinator_partition``
(murmur2 of the mirror name), or, before that topic exists, the live broker the same
hash picks. An assignment job re-reads the mirrors and that placement at the broker's
``metadata.refresh.interval.ms`` and keeps one sync job per coordinated mirror; each sync
job runs a cycle (``MirrorSyncExecutor``) every ``mirror.metadata.refresh.interval.ms``.
A mirror that moves to another broker has its job stopped and its source connection
closed here. Sync errors are counted per kind (the MirrorMetadataManager metrics) and a
failed cycle is simply retried at the next interval.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import logging
from collections.abc import Callable, Mapping
from typing import Any

from mirrorsim.broker.metrics.mirror import SyncError
from mirrorsim.client.admin import Admin
from mirrorsim.client.cluster import ClusterClient
from mirrorsim.coordinator.broker_ports import MetadataManagerHost
from mirrorsim.coordinator.mirror_state_store import metadata_coordinator_partition, murmur2
from mirrorsim.coordinator.periodic_jobs import PeriodicJob
from mirrorsim.coordinator.source_deletions import SourceDeletionStopper
from mirrorsim.coordinator.source_pool import SourcePool
from mirrorsim.coordinator.sync_executor import (
    MirrorSyncExecutor,
    MirrorTopicStopper,
    SyncCycleReport,
)
from mirrorsim.protocol.messages.mirror_state_records import MIRROR_STATE_TOPIC

log = logging.getLogger(__name__)

REFRESH_INTERVAL = "mirror.metadata.refresh.interval.ms"
ASSIGNMENT_INTERVAL = "metadata.refresh.interval.ms"
COMMIT_CONNECTIONS = 16


class MirrorMetadataManager:
    def __init__(
        self,
        broker: MetadataManagerHost,
        *,
        record_error: Callable[[SyncError], None] = lambda kind: None,
        stopper: MirrorTopicStopper | None = None,
    ) -> None:
        self._broker = broker
        self._record_error = record_error
        self.error_counts: collections.Counter[SyncError] = collections.Counter()
        self.sources = SourcePool(broker.broker_id)
        self.executor = MirrorSyncExecutor(
            broker,
            destination_admin=self._destination_admin,
            destination_committers=self._destination_committers,
            stopper=stopper or SourceDeletionStopper(broker),
            record_error=self._count_error,
        )
        self._configs: dict[str, dict[str, str]] = {}
        self._jobs: dict[str, PeriodicJob[SyncCycleReport]] = {}
        self._destination: Admin | None = None
        self._committers: list[ClusterClient] = []
        self._assignment = PeriodicJob(
            f"broker {broker.broker_id} mirror metadata assignment",
            lambda: self._interval_s(ASSIGNMENT_INTERVAL),
            self.reconcile,
        )

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        self._assignment.start()

    async def stop(self) -> None:
        await self._assignment.stop()
        for mirror in list(self._jobs):
            await self._stop_job(mirror)
        await self.sources.close_all()
        if self._destination is not None:
            await self._destination.close()
            self._destination = None
        committers, self._committers = self._committers, []
        for committer in committers:
            await committer.close()

    # -- assignment ----------------------------------------------------------------------

    def coordinator_of(self, mirror: str) -> int:
        """The broker that syncs ``mirror``'s metadata (-1 when nobody can)."""
        snapshot = self._broker.snapshot
        state_topic = snapshot.topics.get(MIRROR_STATE_TOPIC)
        if state_topic is not None and state_topic.partitions:
            index = metadata_coordinator_partition(mirror, len(state_topic.partitions))
            return int(state_topic.partitions[index].leader)
        live = sorted(b.broker_id for b in self._broker.live_brokers())
        if not live:
            return -1
        return live[(murmur2(mirror.encode("utf-8")) & 0x7FFFFFFF) % len(live)]

    def coordinated_mirrors(self) -> list[str]:
        return sorted(self._jobs)

    async def reconcile(self) -> None:
        """Start a sync job for each mirror this broker coordinates; stop the others."""
        records = await self._read_mirrors()
        mine = {
            name: dict(record.configs)
            for name, record in records.items()
            if self.coordinator_of(name) == self._broker.broker_id
        }
        for mirror in sorted(set(self._jobs) - set(mine)):
            log.info("broker %d no longer syncs mirror %s", self._broker.broker_id, mirror)
            await self._stop_job(mirror)
        self._configs = mine
        for mirror in sorted(set(mine) - set(self._jobs)):
            log.info("broker %d syncs the metadata of mirror %s", self._broker.broker_id, mirror)
            job = PeriodicJob(
                f"broker {self._broker.broker_id} mirror {mirror} metadata sync",
                lambda: self._interval_s(REFRESH_INTERVAL),
                functools.partial(self._sync, mirror),
                on_error=lambda exc: self._count_error(SyncError.METADATA_REFRESH),
            )
            self._jobs[mirror] = job
            job.start()

    def completed_cycles(self, mirror: str) -> int:
        """Sync cycles of ``mirror`` this broker has finished (0 if it does not sync it):
        once it has grown by two after a change, a whole cycle ran after the change."""
        job = self._jobs.get(mirror)
        return 0 if job is None else job.completed

    async def refresh_now(self, mirror: str) -> SyncCycleReport:
        """Run one sync cycle of ``mirror`` now and return what it did (for operators and
        tests); LookupError when this broker is not the mirror's metadata coordinator."""
        await self.reconcile()
        job = self._jobs.get(mirror)
        if job is None:
            raise LookupError(
                f"broker {self._broker.broker_id} is not the metadata coordinator of {mirror}"
            )
        return await job.run_now()

    # -- internals -----------------------------------------------------------------------

    async def _read_mirrors(self) -> Mapping[str, Any]:
        return await asyncio.to_thread(self._broker.store.mirrors)  # type: ignore[no-any-return]

    def _interval_s(self, config: str) -> float:
        return int(self._broker.config(config)) / 1000

    async def _sync(self, mirror: str) -> SyncCycleReport:
        config = self._configs[mirror]
        source = await self.sources.admin(mirror, config)
        return await self.executor.run_cycle(mirror, config, source)

    async def _stop_job(self, mirror: str) -> None:
        job = self._jobs.pop(mirror, None)
        if job is not None:
            await job.stop()
        await self.sources.close(mirror)

    async def _destination_admin(self) -> Admin:
        if self._destination is None:
            admin = Admin(
                self._broker.bootstrap,
                client_id=f"broker-{self._broker.broker_id}-mirror-metadata",
                config=self._broker.inter_broker_client,
            )
            await admin.start()
            self._destination = admin
        return self._destination

    async def _destination_committers(self) -> list[ClusterClient]:
        """Clients that carry the group offset commits, one connection each (see
        ``MirrorSyncExecutor._commit_all``); opened at the first commit."""
        if not self._committers:
            committers = [
                ClusterClient(
                    self._broker.bootstrap,
                    client_id=f"broker-{self._broker.broker_id}-mirror-metadata-commit-{i}",
                    config=self._broker.inter_broker_client,
                )
                for i in range(COMMIT_CONNECTIONS)
            ]
            started = await asyncio.gather(
                *(committer.start() for committer in committers), return_exceptions=True
            )
            failure = next((r for r in started if isinstance(r, BaseException)), None)
            if failure is not None:
                for committer in committers:
                    await committer.close()
                raise failure
            self._committers = committers
        return self._committers

    def _count_error(self, kind: SyncError) -> None:
        self.error_counts[kind] += 1
        self._record_error(kind)
