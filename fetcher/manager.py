"""MirrorFetcherManager: which fetcher task copies which mirror partition.

Fetchers are keyed by (fetcher id, source broker, mirror), as Kafka's
``AbstractFetcherManager`` keys its threads by (fetcher id, broker): partitions of
different mirrors never share a task (each mirror has its own credentials), and the
partitions of one mirror spread over ``mirror.num.replica.fetchers`` tasks per source
broker by a stable hash. Each task has its own connection whose client id,
``broker-{id}-fetcher-{n}-mirror-{name}``, lets the source apply client quotas to it.

A partition whose source leader moved is looked up again and handed to the fetcher of
the new leader; a task left without partitions closes.

Every addition needs the source leader as it is now, so it needs a Metadata request
issued after it was asked for. Additions arrive in bursts (a mirror of 1,000 partitions
resumes as 1,000 additions), so each mirror keeps one Metadata request in flight and
the additions that arrive meanwhile share the next one, for the union of their topics.

All tasks share the broker's one mirror replication quota, as Kafka's replica fetcher
threads share one ``ReplicationQuotaManager``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mirrorsim.broker.metrics.mirror import MirrorMetrics
from mirrorsim.client.cluster import ClusterClient
from mirrorsim.client.shared_wait import wait_shared
from mirrorsim.fetcher.fetch_session import Key
from mirrorsim.fetcher.plan import fetcher_index
from mirrorsim.fetcher.task import MirrorFetcherTask, MirrorPartition, MirrorSink
from mirrorsim.fetcher.throttle import MirrorReplicationQuota

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _MetadataRefresh:
    """One pending Metadata request of a mirror's source, shared by its waiters."""

    topics: set[str]
    done: asyncio.Future[None]


@dataclass(frozen=True, slots=True)
class FetcherKey:
    fetcher_id: int
    source_broker: int
    mirror: str


def _retrieve(done: asyncio.Future[None]) -> None:
    """Mark the outcome seen: every waiter may have been cancelled before it resolved."""
    if not done.cancelled():
        done.exception()


def fetcher_client_id(broker_id: int, fetcher_id: int, mirror: str) -> str:
    return f"broker-{broker_id}-fetcher-{fetcher_id}-mirror-{mirror}"


class MirrorFetcherManager:
    def __init__(
        self,
        *,
        broker_id: int,
        sink: MirrorSink,
        source_client: Callable[[str], Any],
        mirror_configs: Callable[[str], dict[str, str]],
        num_fetchers: Callable[[], int],
        max_wait_ms: Callable[[], int],
        metrics: MirrorMetrics,
        quota: MirrorReplicationQuota,
    ) -> None:
        self._broker_id = broker_id
        self.quota = quota
        self._metrics = metrics
        self._sink = sink
        self._source_client = source_client
        self._mirror_configs = mirror_configs
        self._num_fetchers = num_fetchers
        self._max_wait_ms = max_wait_ms
        self._fetchers: dict[FetcherKey, MirrorFetcherTask] = {}
        self._assignment: dict[Key, FetcherKey] = {}
        self._retiring: set[asyncio.Task[None]] = set()
        self._creating: dict[FetcherKey, asyncio.Task[MirrorFetcherTask]] = {}
        self._next_refresh: dict[str, _MetadataRefresh] = {}
        self._refresh_locks: dict[str, asyncio.Lock] = {}
        self._refreshing: set[asyncio.Task[None]] = set()

    @property
    def fetchers(self) -> dict[FetcherKey, MirrorFetcherTask]:
        return dict(self._fetchers)

    def is_fetching(self, key: Key) -> bool:
        return key in self._assignment

    def fetcher_of(self, key: Key) -> MirrorFetcherTask | None:
        fetcher_key = self._assignment.get(key)
        return None if fetcher_key is None else self._fetchers.get(fetcher_key)

    async def add_partition(self, mirror: str, topic: str, partition: int, topic_id: Any) -> None:
        """Start copying ``topic-partition`` from the current source leader."""
        self.remove_partition((topic, partition))
        source: ClusterClient = await self._source_client(mirror)
        await self._refresh_source_metadata(mirror, source, topic)
        info = source.metadata.topics.get(topic)
        found = info.partitions.get(partition) if info is not None else None
        if found is None or found.leader_id < 0:
            raise LookupError(f"the source has no leader for {topic}-{partition}")
        fetcher_key = FetcherKey(
            fetcher_index(topic, partition, self._num_fetchers()), found.leader_id, mirror
        )
        fetcher = await self._fetcher(fetcher_key, source)
        fetcher.add(MirrorPartition(topic, partition, topic_id, found.leader_epoch))
        self._assignment[(topic, partition)] = fetcher_key

    async def _refresh_source_metadata(
        self, mirror: str, source: ClusterClient, topic: str
    ) -> None:
        """Wait for a Metadata request that includes ``topic`` and starts after this call."""
        pending = self._next_refresh.get(mirror)
        if pending is None:
            pending = _MetadataRefresh(set(), asyncio.get_running_loop().create_future())
            pending.done.add_done_callback(_retrieve)
            self._next_refresh[mirror] = pending
            refreshing = asyncio.get_running_loop().create_task(
                self._refresh(mirror, source, pending), name=f"source metadata {mirror}"
            )
            self._refreshing.add(refreshing)
            refreshing.add_done_callback(self._refreshing.discard)
        pending.topics.add(topic)
        await wait_shared(pending.done)

    async def _refresh(self, mirror: str, source: ClusterClient, pending: _MetadataRefresh) -> None:
        try:
            async with self._refresh_locks.setdefault(mirror, asyncio.Lock()):
                if self._next_refresh.get(mirror) is pending:
                    del self._next_refresh[mirror]
                await source.refresh_metadata(sorted(pending.topics))
        except asyncio.CancelledError:
            pending.done.cancel()
            raise
        except Exception as exc:
            pending.done.set_exception(exc)
        else:
            pending.done.set_result(None)
        finally:
            if self._next_refresh.get(mirror) is pending:
                del self._next_refresh[mirror]

    def remove_partition(self, key: Key) -> None:
        """Stop copying ``key``; its fetcher drops any answer still in flight for it."""
        fetcher_key = self._assignment.pop(key, None)
        fetcher = None if fetcher_key is None else self._fetchers.get(fetcher_key)
        if fetcher is not None:
            fetcher.remove(key)
            if not fetcher.partitions:
                self._retire(fetcher_key, fetcher)

    async def _fetcher(self, key: FetcherKey, source: ClusterClient) -> MirrorFetcherTask:
        """The fetcher for ``key``; concurrent callers share one creation."""
        found = self._fetchers.get(key)
        if found is not None:
            return found
        creating = self._creating.get(key)
        if creating is None:
            creating = asyncio.get_running_loop().create_task(
                self._new_fetcher(key, source), name=f"create fetcher {key}"
            )
            self._creating[key] = creating
            creating.add_done_callback(lambda _: self._creating.pop(key, None))
        return await wait_shared(creating)

    async def _new_fetcher(self, key: FetcherKey, source: ClusterClient) -> MirrorFetcherTask:
        client = ClusterClient(
            ",".join(f"{b.host}:{b.port}" for b in source.brokers.values()),
            client_id=fetcher_client_id(self._broker_id, key.fetcher_id, key.mirror),
            config=self._mirror_configs(key.mirror),
        )
        try:
            await client.start()
        except BaseException:
            await client.close()
            raise
        fetcher = MirrorFetcherTask(
            client=client,
            source_broker=key.source_broker,
            sink=self._sink,
            max_wait_ms=self._max_wait_ms,
            stats=self._metrics.fetcher_stats(key.source_broker, key.fetcher_id, key.mirror),
            quota=self.quota,
        )
        self._fetchers[key] = fetcher
        fetcher.start()
        return fetcher

    def _retire(self, key: FetcherKey, task: MirrorFetcherTask) -> None:
        if self._fetchers.get(key) is task:
            del self._fetchers[key]
            stopping = asyncio.get_running_loop().create_task(
                task.stop(), name=f"stop fetcher {key}"
            )
            self._retiring.add(stopping)
            stopping.add_done_callback(self._retiring.discard)

    async def shutdown(self) -> None:
        for pending in (*self._creating.values(), *self._refreshing):
            pending.cancel()
        await asyncio.gather(*self._creating.values(), *self._refreshing, return_exceptions=True)
        fetchers, self._fetchers = list(self._fetchers.values()), {}
        self._assignment.clear()
        await asyncio.gather(*(f.stop() for f in fetchers), *self._retiring, return_exceptions=True)
