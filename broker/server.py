"""One broker: its listener, its view of the cluster metadata and the components that own
partitions and groups.

Start order makes the broker visible only when it can serve: open the metadata store,
start the components, bind the listener, then register (with the bound port) and apply
the partition states. Stop runs the other way round: stop the periodic jobs, drain the
listener, stop the components, unregister.

Every start registers a new incarnation (a new broker epoch), fenced: its log may have
lost an unflushed tail its previous incarnation had acknowledged. The broker applies no
partition state until it is unfenced: at once when the store shows it no role (a first
start, a restart after a controlled shutdown), else once the controller has moved its
leaderships and taken it out of the ISRs; it then starts as a follower and rejoins the
ISRs by catching up. ``start`` returns once it is unfenced (or after a session timeout, when no
controller answered; the refresh keeps waiting).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import mirrorsim.broker.handlers  # noqa: F401  (registers every handler)
from mirrorsim.broker.auth.inter_broker import inter_broker_client_config
from mirrorsim.broker.config import (
    BrokerConfigLayers,
    effective_broker_config,
    normalize_static_configs,
    resolve_broker_config,
)
from mirrorsim.broker.controller import ClusterController
from mirrorsim.broker.group import GroupConfig, GroupCoordinator, SystemClock
from mirrorsim.broker.group.batched_offset_store import BatchedOffsetStore
from mirrorsim.broker.group.batched_share_state_store import BatchedShareStateStore
from mirrorsim.broker.group.ownership import ownership
from mirrorsim.broker.group.share_sessions import ShareSessionCache
from mirrorsim.broker.group.share_state_store import ShareStateStore
from mirrorsim.broker.handlers.dispatcher import Dispatcher, preload_message_classes
from mirrorsim.broker.handlers.metadata_cache import EncodedTopicCache
from mirrorsim.broker.handlers.topic_config_entries import TopicConfigEntries
from mirrorsim.broker.log import LogManager
from mirrorsim.broker.log.file_handles import FileHandles, raise_descriptor_limit
from mirrorsim.broker.log_format import current_broker
from mirrorsim.broker.metadata.controller import MetadataController
from mirrorsim.broker.metadata.group_configs import group_configs
from mirrorsim.broker.metadata.models import BrokerRegistration
from mirrorsim.broker.metadata.offset_store import SqlOffsetStore
from mirrorsim.broker.metadata.share_state_store import SqlShareStateStore
from mirrorsim.broker.metadata.store import MetadataStore, MetadataStoreUnavailable
from mirrorsim.broker.metadata.view import ClusterSnapshot, partition_changes
from mirrorsim.broker.metrics import BrokerMetrics
from mirrorsim.broker.metrics.broker_metrics import metrics_port
from mirrorsim.broker.metrics.partition_health import (
    ControllerHealth,
    controller_health,
    replica_health,
)
from mirrorsim.broker.network.advertised import register_listeners
from mirrorsim.broker.network.connection import ConnectionLimits
from mirrorsim.broker.network.listeners import Listeners
from mirrorsim.broker.quotas.manager import ClientQuotas
from mirrorsim.broker.quotas.rate import WindowConfig
from mirrorsim.broker.quotas.store import client_quotas
from mirrorsim.broker.replica import ReplicaManager
from mirrorsim.broker.replica.follower_fetcher import FetcherConfig, ReplicaFetcherManager
from mirrorsim.broker.replica.log_cleaner import LogCleaner
from mirrorsim.broker.share.manager import ShareLimits, SharePartitionManager
from mirrorsim.broker.share.settings import ShareGroupSettingsCache
from mirrorsim.broker.txn.service import TransactionService
from mirrorsim.coordinator.lifecycle import MirrorLifecycle
from mirrorsim.coordinator.metadata_manager import MirrorMetadataManager
from mirrorsim.coordinator.metrics_view import observe_mirrors
from mirrorsim.coordinator.mirror_coordinator import MirrorCoordinator

log = logging.getLogger(__name__)


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


class Broker:
    def __init__(
        self,
        *,
        broker_id: int,
        host: str,
        port: int,
        data_dir: Path | str,
        metadata_url: str,
        cluster_id: str | None = None,
        configs: Mapping[str, Any] | None = None,
        rack: str | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.host = host
        self.data_dir = Path(data_dir)
        self.metadata_url = metadata_url
        self.rack = rack
        self.static_configs = normalize_static_configs({**(configs or {}), "broker.id": broker_id})
        self._proposed_cluster_id = cluster_id
        self.cluster_id: str = cluster_id or ""
        self.snapshot = ClusterSnapshot()
        self._applied = ClusterSnapshot()
        """The snapshot whose partition states the replica manager holds."""
        self._offline_reported = 0
        self.broker_epoch = -1
        """This incarnation's broker epoch, from its registration."""
        self._unfenced = False
        self._refresh_lock = asyncio.Lock()
        self._group_ownership_live: tuple[int, ...] | None = None
        self._jobs: list[asyncio.Task[None]] = []
        self._resources = contextlib.AsyncExitStack()
        self._configured_port = port
        self.metrics = BrokerMetrics()
        self.metadata_topic_cache = EncodedTopicCache()
        """The Metadata topic entries this broker answered with, encoded."""
        self.topic_config_entries = TopicConfigEntries()
        """The DescribeConfigs entries of topics this broker answered with, built."""
        self.server = Listeners.from_config(
            host,
            port,
            Dispatcher(self),
            ConnectionLimits(
                max_request_bytes=int(self.config("socket.request.max.bytes")),
                idle_timeout_s=int(self.config("connections.max.idle.ms")) / 1000,
            ),
            self.config,
        )
        self.inter_broker_client = inter_broker_client_config(
            self.config, self.static_configs, self.server.inter_broker_listener
        )
        """How every internal client authenticates on the inter-broker listener."""
        self.store: MetadataStore
        self.controller: MetadataController
        self.log_manager: LogManager
        self.replica_manager: ReplicaManager
        self.groups: GroupCoordinator
        self.share_states: ShareStateStore
        """The durable state of the share partitions this broker leads."""
        self.share_sessions: ShareSessionCache
        self.share_partitions: SharePartitionManager
        self.transactions: TransactionService
        self.cluster_controller: ClusterController
        self.mirrors: MirrorCoordinator
        self.mirror_lifecycle: MirrorLifecycle
        self.mirror_metadata: MirrorMetadataManager

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    # configuration and cluster view

    def config_layers(self) -> BrokerConfigLayers:
        return self.snapshot.config_layers(self.broker_id, self.static_configs)

    def config(self, name: str) -> Any:
        """The typed, effective value of a broker config (dynamic over static over default)."""
        return effective_broker_config(self.config_layers(), name)

    def live_brokers(self) -> list[BrokerRegistration]:
        return self.snapshot.live_brokers(
            wall_clock_ms(), int(self.config("broker.session.timeout.ms"))
        )

    def _controller_health(self) -> ControllerHealth:
        """The cluster as this broker last read it, if it is the active controller."""
        if not self.cluster_controller.is_active():
            return ControllerHealth()
        snapshot = self.snapshot
        live = {b.broker_id for b in self.live_brokers()}
        return controller_health(
            {name: topic.partitions for name, topic in snapshot.topics.items()},
            {b: b not in live or r.fenced for b, r in snapshot.brokers.items()},
        )

    def controller_id(self) -> int:
        """The holder of the controller lease (before the first tick: the lowest live id)."""
        active = self.cluster_controller.active_controller_id()
        if active >= 0:
            return active
        live = self.live_brokers()
        return live[0].broker_id if live else self.broker_id

    # lifecycle

    async def start(self) -> None:
        """Start every component; on failure, stop those already started and re-raise.

        Sets ``current_broker`` first, so every task started here logs this broker's id."""
        current_broker.set(self.broker_id)
        self._jobs = []
        try:
            await self._start_components()
        except BaseException:
            await self._stop_jobs()
            await self._resources.aclose()
            raise
        self._jobs += [
            asyncio.create_task(asyncio.to_thread(preload_message_classes)),
            self._periodic(
                "metadata refresh", "metadata.refresh.interval.ms", self.refresh_metadata
            ),
            self._periodic(
                "controller", "metadata.refresh.interval.ms", self.cluster_controller.tick
            ),
            self._periodic(
                "client quota refresh",
                "metadata.refresh.interval.ms",
                self.refresh_client_quotas,
            ),
            self._periodic(
                "isr expiration", "replica.lag.time.max.ms", self._expire_isr, fraction=0.5
            ),
            self._periodic(
                "log retention", "log.retention.check.interval.ms", self._delete_old_segments
            ),
            self._periodic(
                "leader balancing",
                "leader.imbalance.check.interval.seconds",
                self.cluster_controller.balance_leaders,
                fraction=1000.0,
            ),
        ]
        if self.config("log.cleaner.enable"):
            self._jobs.append(
                self._periodic("log cleaner", "log.cleaner.backoff.ms", self._clean_logs)
            )
        log.info(
            "broker %d of cluster %s ready on %s", self.broker_id, self.cluster_id, self.bootstrap
        )

    async def _start_components(self) -> None:
        resources = self._resources
        # a restarted broker's fresh replica manager holds no partitions yet, so the
        # first refresh must diff against an empty view to re-apply every partition
        self.snapshot = ClusterSnapshot()
        self._applied = ClusterSnapshot()
        self._unfenced = False
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.store = await asyncio.to_thread(MetadataStore.open, self.metadata_url)
        resources.push_async_callback(asyncio.to_thread, self.store.close)
        self.cluster_id = await asyncio.to_thread(
            self.store.ensure_cluster_id, self._proposed_cluster_id
        )
        self.client_quotas = ClientQuotas(
            WindowConfig(
                samples=int(self.config("quota.window.num")),
                window_ms=int(self.config("quota.window.size.seconds")) * 1000,
            )
        )
        await self.refresh_client_quotas()
        self.controller = MetadataController(
            self.store,
            broker_id=self.broker_id,
            static_configs=self.static_configs,
            snapshot=lambda: self.snapshot,
            live_broker_ids=lambda: [b.broker_id for b in self.live_brokers()],
            on_change=self.refresh_metadata,
        )
        limit = raise_descriptor_limit()
        log.info(
            "broker %d: descriptor limit soft %d hard %d; segment files keep at most %d open",
            self.broker_id,
            limit.soft,
            limit.hard,
            limit.budget,
        )
        self.log_manager = LogManager(self.data_dir, handles=FileHandles(limit.budget))
        resources.callback(self.log_manager.close)
        self.replica_manager = ReplicaManager(
            broker_id=self.broker_id, log_manager=self.log_manager, clock=wall_clock_ms
        )
        await self.replica_manager.start()
        resources.push_async_callback(self.replica_manager.stop)
        self.log_cleaner = LogCleaner(self.replica_manager)
        self.cluster_controller = ClusterController(
            broker_id=self.broker_id,
            store=self.store,
            config=self.config,
            on_change=self.refresh_metadata,
        )
        self.metrics.partition_health.observe(
            lambda: replica_health(self.replica_manager.partitions()),
            self._controller_health,
        )
        self.replica_manager.enable_replication(
            ReplicaFetcherManager(
                broker_id=self.broker_id,
                replica_manager=self.replica_manager,
                endpoint=self._endpoint,
                config=FetcherConfig.from_broker_config(self.config),
                security=self.inter_broker_client,
                broker_epoch=lambda: self.broker_epoch,
            ),
            self.cluster_controller.alter_isr,
        )
        self.groups = GroupCoordinator(
            offset_store=BatchedOffsetStore(SqlOffsetStore(self.store)),
            clock=SystemClock(),
            config=GroupConfig.from_properties(
                {v.name: v.value for v in resolve_broker_config(self.config_layers())}
            ),
            owns=lambda _group_id: False,  # until the first refresh shows the live brokers
        )
        self._group_ownership_live = None
        await self.groups.start()
        resources.push_async_callback(self.groups.stop)
        self.share_states = BatchedShareStateStore(SqlShareStateStore(self.store))
        self.share_sessions = ShareSessionCache(
            int(self.config("group.share.max.groups")) * int(self.config("group.share.max.size"))
        )
        self.share_partitions = SharePartitionManager(
            replicas=self.replica_manager,
            states=self.share_states,
            group_settings=ShareGroupSettingsCache(
                lambda group_id: group_configs(self.store, group_id), SystemClock()
            ),
            limits=ShareLimits(
                delivery_count_limit=int(self.config("group.share.delivery.count.limit")),
                max_in_flight=int(self.config("group.share.partition.max.record.locks")),
                record_lock_duration_ms=int(self.config("group.share.record.lock.duration.ms")),
            ),
            clock=SystemClock(),
        )
        resources.push_async_callback(self.share_partitions.stop)
        self.transactions = TransactionService(self)
        # cluster mirroring: partition states, fetchers, failover
        self.mirrors = MirrorCoordinator(self)
        self.mirror_lifecycle = MirrorLifecycle(self)
        observe_mirrors(self.metrics.mirror, self.mirrors, self.replica_manager)
        resources.push_async_callback(self.mirrors.stop)
        await self.server.start()
        resources.push_async_callback(self._drain_listener)
        await self.metrics.start_endpoint(
            self.host, metrics_port(self.config("metrics.port"), self._configured_port)
        )
        resources.push_async_callback(self.metrics.stop_endpoint)
        resources.push_async_callback(self._controlled_shutdown)
        host, port = self.server.registered_endpoint()
        self.broker_epoch = await asyncio.to_thread(
            self.store.register_broker, self.broker_id, host, port, self.rack
        )
        self.cluster_controller.broker_epoch = self.broker_epoch
        log.info("broker %d registered at broker epoch %d", self.broker_id, self.broker_epoch)
        await asyncio.to_thread(
            register_listeners, self.store, self.broker_id, self.server.endpoints()
        )
        resources.push_async_callback(
            asyncio.to_thread, self.store.unregister_broker, self.broker_id, self.broker_epoch
        )
        # the session starts with the registration: the rest of the start (unfencing,
        # opening the logs) may outlast a session timeout under load
        self._jobs.append(
            self._periodic("broker heartbeat", "broker.heartbeat.interval.ms", self._heartbeat)
        )
        await self._await_unfenced()
        await self.transactions.start()
        resources.push_async_callback(self.transactions.stop)
        # cluster mirroring: periodic topic, config, group offset and ACL sync
        self.mirror_metadata = MirrorMetadataManager(
            self, record_error=self.metrics.mirror.record_sync_error
        )
        self.mirror_metadata.start()
        resources.push_async_callback(self.mirror_metadata.stop)

    async def _await_unfenced(self) -> None:
        """Wait (at most a session timeout) until this incarnation is unfenced: at once
        when it holds no role, else once the controller moved them. Runs the controller's
        pass here too: with the lease free or held by this broker id, nobody else would.
        The heartbeat job runs meanwhile: the controller unfences only live brokers."""
        deadline = time.monotonic() + int(self.config("broker.session.timeout.ms")) / 1000
        while True:
            try:
                if await self.cluster_controller.unfence_if_idle():
                    log.info("broker %d: unfenced (it held no role)", self.broker_id)
                await self.cluster_controller.tick()
            except Exception:
                log.exception("broker %d: unfencing failed", self.broker_id)
            await self.refresh_metadata()
            if self._unfenced:
                return
            if time.monotonic() >= deadline:
                log.warning("broker %d: still fenced, serving no partition yet", self.broker_id)
                return
            await asyncio.sleep(int(self.config("metadata.refresh.interval.ms")) / 1000)

    def _unfenced_now(self) -> bool:
        """Whether the store shows this incarnation cleared by the controller."""
        own = self.snapshot.brokers.get(self.broker_id)
        return own is not None and own.broker_epoch == self.broker_epoch and not own.fenced

    async def _drain_listener(self) -> None:
        await self.server.stop(int(self.config("shutdown.drain.timeout.ms")) / 1000)

    # replication

    def _endpoint(self, broker_id: int) -> tuple[str, int] | None:
        registration = self.snapshot.brokers.get(broker_id)
        return None if registration is None else (registration.host, registration.port)

    async def _expire_isr(self) -> None:
        self.replica_manager.maybe_shrink_isr(int(self.config("replica.lag.time.max.ms")))

    async def _delete_old_segments(self) -> None:
        deleted = await self.replica_manager.delete_old_segments()
        if deleted:
            log.info("broker %d: log retention deleted %d segments", self.broker_id, deleted)

    async def _clean_logs(self) -> None:
        cleaned = await self.log_cleaner.clean()
        if cleaned:
            log.info(
                "broker %d: log cleaner cleaned %d segments of %d logs, %d bytes to %d",
                self.broker_id,
                sum(stats.segments_cleaned for stats in cleaned),
                len(cleaned),
                sum(stats.bytes_read for stats in cleaned),
                sum(stats.bytes_written for stats in cleaned),
            )

    async def _controlled_shutdown(self) -> None:
        """Runs once unregistered: hand the lease over, then wait (at most a session
        timeout, after which the controller would have acted anyway) for the active
        controller to move this broker's leaderships to other in-sync replicas."""
        await self.cluster_controller.resign()
        if not self.config("controlled.shutdown.enable"):
            return

        async def refreshed() -> ClusterSnapshot:
            await self.refresh_metadata()
            return self.snapshot

        try:
            await self.cluster_controller.await_leadership_moved(
                refreshed, int(self.config("broker.session.timeout.ms")) / 1000
            )
        except OSError as exc:
            log.warning(
                "broker %d: controlled shutdown cut short (%s); the controller moves its "
                "leaderships once the session times out",
                self.broker_id,
                exc,
            )

    async def stop(self) -> None:
        """Stop the jobs, drain the listener, then stop the components in reverse order."""
        await self._stop_jobs()
        await self._resources.aclose()
        log.info("broker %d stopped", self.broker_id)

    async def _stop_jobs(self) -> None:
        for job in self._jobs:
            job.cancel()
        for job in self._jobs:
            with contextlib.suppress(asyncio.CancelledError):
                await job
        self._jobs = []

    # metadata propagation

    async def refresh_metadata(self) -> None:
        """Re-read the store and hand every partition change to the replica manager.

        Only the broker rows are re-read when the store's change counter did not move
        (``MetadataStore.snapshot``); the live-broker set is recomputed either way.

        Serialized by a lock so that two refreshes never apply their diffs out of order
        (the diff is against the last applied snapshot).
        """
        async with self._refresh_lock:
            self.snapshot = await asyncio.to_thread(self.store.snapshot, self.snapshot)
            self._unfenced = self._unfenced or self._unfenced_now()
            if self._unfenced:
                await self._apply_partition_changes()
            await self._update_group_ownership()
            await self.mirrors.on_metadata_change()

    async def refresh_client_quotas(self) -> None:
        """Read the client quotas every broker enforces (they are not in the snapshot: a
        handful of rows, read on their own)."""
        self.client_quotas.update(await asyncio.to_thread(client_quotas, self.store))

    async def _apply_partition_changes(self) -> None:
        """Hand the replica manager what changed since the snapshot it last applied.

        The applied snapshot moves only once every change is applied: a refresh that fails
        or is cancelled part way (a stopping broker cancels its periodic one) applies the
        whole diff again next time; applying a partition state twice is harmless."""
        fresh = self.snapshot
        changed, removed = partition_changes(
            self._applied.topics,
            fresh.topics,
            old_layers=self._applied.config_layers(self.broker_id, self.static_configs),
            new_layers=fresh.config_layers(self.broker_id, self.static_configs),
        )
        for topic, partition in removed:
            await self.replica_manager.remove_partition(topic, partition, delete=True)
        for state in changed:
            await self.replica_manager.apply_partition_state(state)
        offline = self.replica_manager.offline_partitions()
        if offline:
            self._report_offline(offline)
            return
        self._offline_reported = 0
        self._applied = fresh

    def _report_offline(self, offline: dict[tuple[str, int], str]) -> None:
        """One line when the number of partitions whose log cannot be opened changes; the
        diff is applied again at the next refresh, which opens them once it can."""
        if len(offline) == self._offline_reported:
            return
        self._offline_reported = len(offline)
        (topic, partition), reason = next(iter(offline.items()))
        log.warning(
            "broker %d: %d partitions offline (KAFKA_STORAGE_ERROR), e.g. %s-%d: %s; "
            "retrying at each metadata refresh",
            self.broker_id,
            len(offline),
            topic,
            partition,
            reason,
        )

    async def _update_group_ownership(self) -> None:
        """Groups follow the live broker set (``mirrorsim.broker.group.ownership``)."""
        live = tuple(b.broker_id for b in self.live_brokers())
        if live != self._group_ownership_live:
            self._group_ownership_live = live
            partition_count = int(self.config("offsets.topic.num.partitions"))
            await self.groups.update_ownership(ownership(self.broker_id, partition_count, live))

    async def _heartbeat(self) -> None:
        renewed = await asyncio.to_thread(self.store.heartbeat, self.broker_id, self.broker_epoch)
        if not renewed:
            log.warning(
                "broker %d: broker epoch %d is no longer registered (a newer incarnation?)",
                self.broker_id,
                self.broker_epoch,
            )

    def _periodic(
        self,
        name: str,
        interval_config: str,
        work: Callable[[], Awaitable[object]],
        *,
        fraction: float = 1.0,
    ) -> asyncio.Task[None]:
        """Run ``work`` every ``interval_config`` times ``fraction`` milliseconds (a
        ``fraction`` of 1000 for a config in seconds), read afresh each time."""

        async def loop() -> None:
            while True:
                await asyncio.sleep(int(self.config(interval_config)) * fraction / 1000)
                started = time.monotonic()
                try:
                    await work()
                except MetadataStoreUnavailable as exc:
                    # Out of descriptors or a database that went away: one line, as the
                    # request paths report it; the job runs again at its next interval.
                    log.error("broker %d: job %r failed: %s", self.broker_id, name, exc)
                except Exception:
                    log.exception("broker %d: job %r failed", self.broker_id, name)
                log.debug(
                    "broker %d: job %r took %.3fs", self.broker_id, name, time.monotonic() - started
                )

        return asyncio.create_task(loop(), name=f"broker {self.broker_id} {name}")
