"""The cluster view every internal client shares: bootstrap, metadata, per-node connections.

``ClusterClient`` bootstraps from ``host:port`` pairs, keeps the latest Metadata (brokers,
controller, topic ids, partition leaders), opens one pipelined ``BrokerConnection`` per
node on first use and reopens it after a failure with Kafka's reconnect backoff.

Requests are given either as message instances (sent at their class's version) or as a
``RequestSpec`` (api key + a version-independent field description), which is built at
the highest version both sides support. ``send_*`` retry connection failures; ``retrying``
wraps a whole attempt (send + interpret the response) and retries it on connection
failures and retriable Kafka error codes, refreshing metadata between attempts, with
exponential backoff bounded by ``default.api.timeout.ms``.
"""

from __future__ import annotations

import asyncio
import logging
import random
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from types import MappingProxyType
from typing import Any, TypeVar

import tenacity

from mirrorsim.client.backoff import ReconnectBackoff
from mirrorsim.client.config import ClientConfig
from mirrorsim.client.connection import BrokerConnection, InFlightRequest
from mirrorsim.client.errors import (
    KafkaConnectionError,
    RequestTimedOut,
    UnsupportedVersion,
    raise_for_error,
)
from mirrorsim.client.network_stats import NetworkStats
from mirrorsim.client.shared_wait import wait_shared
from mirrorsim.protocol.builder import build_request
from mirrorsim.protocol.errors import ErrorCode, KafkaError, error_code_from_wire
from mirrorsim.protocol.messages.constants import COORDINATOR_TYPE_MIRROR
from mirrorsim.protocol.registry import request_class

log = logging.getLogger(__name__)

T = TypeVar("T")
METADATA_KEY = 3
FIND_COORDINATOR_KEY = 10
_MAX_PROBED_VERSION = 32


class CoordinatorType:
    """FindCoordinator key types (MIRROR is KIP-1279's addition)."""

    GROUP = 0
    TRANSACTION = 1
    SHARE = 2
    MIRROR = COORDINATOR_TYPE_MIRROR


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    partition: int
    leader_id: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...]
    error: ErrorCode | int = ErrorCode.NONE


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID | None
    is_internal: bool
    partitions: Mapping[int, PartitionInfo]
    error: ErrorCode | int = ErrorCode.NONE


@dataclass(frozen=True, slots=True)
class ClusterMetadata:
    cluster_id: str | None
    controller_id: int
    brokers: Mapping[int, BrokerInfo]
    topics: Mapping[str, TopicInfo]


@dataclass(frozen=True, slots=True)
class RequestSpec:
    """A request described once for every version; see ``mirrorsim.protocol.builder``."""

    api_key: int
    fields: Mapping[str, Any] = field(default_factory=dict)
    versions: tuple[int, ...] | None = None


@cache
def versions_we_have(api_key: int) -> tuple[int, ...]:
    """Every version of ``api_key`` this codebase can encode (kio's plus registered ones)."""
    return tuple(v for v in range(_MAX_PROBED_VERSION) if request_class(api_key, v) is not None)


def parse_bootstrap(bootstrap: str) -> list[tuple[str, int]]:
    addresses = []
    for entry in bootstrap.split(","):
        entry = entry.strip()
        if not entry:
            continue
        host, sep, port = entry.rpartition(":")
        if not sep or not port.isdigit():
            raise ValueError(f"bootstrap address {entry!r} is not host:port")
        addresses.append((host.strip("[]") or "localhost", int(port)))
    if not addresses:
        raise ValueError("bootstrap servers are empty")
    return addresses


def is_retriable(exc: BaseException) -> bool:
    if isinstance(exc, KafkaConnectionError | RequestTimedOut):
        return True
    return isinstance(exc, KafkaError) and exc.retriable


class ClusterClient:
    def __init__(
        self,
        bootstrap: str,
        *,
        client_id: str,
        config: Mapping[str, str] | ClientConfig = MappingProxyType({}),
    ) -> None:
        """``config`` is Kafka client properties, or a ready ``ClientConfig`` (the
        brokers' internal clients share one, with its TLS context, built at start)."""
        self.bootstrap = parse_bootstrap(bootstrap)
        self.client_id = client_id
        self.config = (
            config if isinstance(config, ClientConfig) else ClientConfig.from_properties(config)
        )
        self._metadata = ClusterMetadata(None, -1, {}, {})
        self._last_metadata: tuple[Any, ClusterMetadata] | None = None
        """The last Metadata response read and its view: a connection hands back the
        very response it decoded before when the broker repeats it byte for byte
        (``connection.REMEMBERED_ANSWERS``), and its view is then the same too."""
        self._connections: dict[int, BrokerConnection] = {}
        self.network = NetworkStats()
        """What every connection of this client carried (Kafka's client network metrics)."""
        self._connecting: dict[int, asyncio.Task[BrokerConnection]] = {}
        self._backoff: dict[int, ReconnectBackoff] = {}

    async def __aenter__(self) -> ClusterClient:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def metadata(self) -> ClusterMetadata:
        return self._metadata

    @property
    def cluster_id(self) -> str | None:
        return self._metadata.cluster_id

    @property
    def controller_id(self) -> int:
        return self._metadata.controller_id

    @property
    def brokers(self) -> Mapping[int, BrokerInfo]:
        return self._metadata.brokers

    def leader_for(self, topic: str, partition: int) -> int | None:
        info = self._metadata.topics.get(topic)
        found = info.partitions.get(partition) if info else None
        return found.leader_id if found is not None and found.leader_id >= 0 else None

    def topic_id(self, topic: str) -> uuid.UUID | None:
        info = self._metadata.topics.get(topic)
        return info.topic_id if info else None

    def partitions_for(self, topic: str) -> list[int]:
        info = self._metadata.topics.get(topic)
        return sorted(info.partitions) if info else []

    async def start(self) -> None:
        """Connect to the first reachable bootstrap address and load the broker list."""
        await self.retrying(self._bootstrap_once, refresh=False)

    async def ensure_bootstrapped(self) -> None:
        """Load the broker list once, for clients that connect lazily on their first request
        (one attempt; the caller's retry policy decides how long to keep trying)."""
        if not self.brokers:
            await self._bootstrap_once()

    async def close(self) -> None:
        for task in list(self._connecting.values()):
            task.cancel()
        await asyncio.gather(*self._connecting.values(), return_exceptions=True)
        connections, self._connections = list(self._connections.values()), {}
        await asyncio.gather(*(c.close() for c in connections))

    async def refresh_metadata(self, topics: Iterable[str] | None = None) -> ClusterMetadata:
        """Fetch metadata for ``topics`` (all topics when None) and merge it into the cache.

        Returns this response's view, including topics the broker reported with an error.
        """
        names = None if topics is None else list(topics)
        response = await self.send_to_any(_metadata_spec(names))
        last = self._last_metadata
        if last is not None and last[0] is response:
            fresh = last[1]
        else:
            fresh = _metadata_from_response(response)
            self._last_metadata = (response, fresh)
        self._merge(fresh, names)
        return fresh

    async def connection(self, node_id: int) -> BrokerConnection:
        existing = self._connections.get(node_id)
        if existing is not None and existing.connected:
            return existing
        task = self._connecting.get(node_id)
        if task is None:
            task = asyncio.create_task(self._connect(node_id), name=f"connect node {node_id}")
            self._connecting[node_id] = task
            task.add_done_callback(lambda done: self._connected(node_id, done))
        return await wait_shared(task)

    def _connected(self, node_id: int, task: asyncio.Task[BrokerConnection]) -> None:
        """A connect is shared (``wait_shared``), so it outlives a caller that gave up on it
        (a timeout); its failure is read here, where it is no news, instead of being
        logged as "Task exception was never retrieved" when the task is collected."""
        self._connecting.pop(node_id, None)
        if not task.cancelled():
            task.exception()

    async def send_to_node(self, node_id: int, body: Any) -> Any:
        return await self._retry_connection_errors(lambda: self.send_to_node_once(node_id, body))

    async def send_to_node_once(self, node_id: int, body: Any) -> Any:
        """One attempt, no retries: for callers with their own backoff and failover, such as
        fetchers, which should move to a new leader instead of waiting out a dead one."""
        return await self._send_once(await self.connection(node_id), body)

    async def start_on_node(self, node_id: int, body: Any) -> InFlightRequest:
        """Write one request to ``node_id`` (connecting first if need be) and return once it
        is written, without its response: one attempt, as ``send_to_node_once``."""
        return _start(await self.connection(node_id), body)

    async def send_to_any(self, body: Any) -> Any:
        async def once() -> Any:
            return await self._send_once(await self._any_connection(), body)

        return await self._retry_connection_errors(once)

    async def send_to_controller(self, body: Any) -> Any:
        """Send to the active controller as the latest metadata names it. A controller that
        cannot be reached has most likely moved (or the answering broker's view was stale),
        so the retry after a connection failure asks for fresh metadata first instead of
        knocking on the same door until the api timeout. A client that has not bootstrapped
        yet does so first, so its first request goes straight to the controller it names."""
        stale = False

        async def once() -> Any:
            nonlocal stale
            await self.ensure_bootstrapped()
            if stale or self.controller_id not in self.brokers:
                await self.refresh_metadata([])
            try:
                return await self._send_once(await self.connection(self.controller_id), body)
            except KafkaConnectionError:
                stale = True
                raise

        return await self._retry_connection_errors(once)

    async def find_coordinator(self, key: str, key_type: int = CoordinatorType.GROUP) -> BrokerInfo:
        """The broker coordinating ``key`` (a group id, transactional id or mirror name)."""

        async def once() -> BrokerInfo:
            spec = RequestSpec(
                FIND_COORDINATOR_KEY, {"key": key, "key_type": key_type, "coordinator_keys": [key]}
            )
            response = await self.send_to_any(spec)
            found = response.coordinators[0] if hasattr(response, "coordinators") else response
            raise_for_error(found.error_code, getattr(found, "error_message", None))
            broker = BrokerInfo(int(found.node_id), found.host, int(found.port))
            self._learn_broker(broker)
            return broker

        return await self.retrying(once)

    async def retrying(self, attempt: Callable[[], Awaitable[T]], *, refresh: bool = True) -> T:
        """Run ``attempt`` until it succeeds, fails for good, or the api timeout passes."""
        retry_count = 0
        async for trial in self._retry_policy(is_retriable):
            with trial:
                if retry_count and refresh:
                    await self.refresh_quietly()
                retry_count += 1
                return await attempt()
        raise AssertionError("unreachable: tenacity reraises the last error")

    def _retry_policy(self, retry_on: Callable[[BaseException], bool]) -> tenacity.AsyncRetrying:
        cfg = self.config
        return tenacity.AsyncRetrying(
            retry=tenacity.retry_if_exception(retry_on),
            wait=tenacity.wait_exponential(
                multiplier=cfg.retry_backoff_ms / 1000,
                max=max(cfg.retry_backoff_ms, cfg.retry_backoff_max_ms) / 1000,
            ),
            stop=tenacity.stop_after_delay(cfg.default_api_timeout_ms / 1000),
            before_sleep=lambda state: log.debug(
                "retrying after %s", state.outcome.exception() if state.outcome else None
            ),
            reraise=True,
        )

    async def _retry_connection_errors(self, once: Callable[[], Awaitable[T]]) -> T:
        async for trial in self._retry_policy(lambda e: isinstance(e, KafkaConnectionError)):
            with trial:
                return await once()
        raise AssertionError("unreachable: tenacity reraises the last error")

    async def _send_once(self, connection: BrokerConnection, body: Any) -> Any:
        return await _start(connection, body).response()

    async def refresh_quietly(self, within_s: float | None = None) -> None:
        """Re-learn the brokers and the known topics, at most ``within_s`` seconds; a
        failure is only logged, since the caller retries (or answers retriable) anyway."""
        try:
            async with asyncio.timeout(within_s):
                await self.refresh_metadata(list(self._metadata.topics))
        except (KafkaConnectionError, RequestTimedOut, KafkaError, TimeoutError) as exc:
            log.debug("metadata refresh before retry failed: %s", exc)

    async def _bootstrap_once(self) -> None:
        failures = []
        for host, port in self.bootstrap:
            connection = self._new_connection(host, port)
            try:
                await connection.connect()
                response = await connection.send(_build_for(connection, _metadata_spec([])))
            except (KafkaConnectionError, RequestTimedOut) as exc:
                failures.append(f"{host}:{port}: {exc}")
                continue
            finally:
                await connection.close()
            self._metadata = _metadata_from_response(response)
            return
        raise KafkaConnectionError("no bootstrap broker reachable: " + "; ".join(failures))

    async def _any_connection(self) -> BrokerConnection:
        connected = [c for c in self._connections.values() if c.connected]
        if connected:
            return random.choice(connected)
        node_ids = list(self.brokers)
        random.shuffle(node_ids)
        last_error: KafkaConnectionError | None = None
        for node_id in node_ids:
            try:
                return await self.connection(node_id)
            except KafkaConnectionError as exc:
                last_error = exc
        if last_error is None:
            await self._bootstrap_once()
            return await self._any_connection()
        raise last_error

    async def _connect(self, node_id: int) -> BrokerConnection:
        await self.ensure_bootstrapped()
        broker = self.brokers.get(node_id)
        if broker is None:
            raise KafkaConnectionError(f"node {node_id} is not in the cluster metadata")
        backoff = self._backoff.setdefault(
            node_id,
            ReconnectBackoff(
                self.config.reconnect_backoff_ms, self.config.reconnect_backoff_max_ms
            ),
        )
        loop = asyncio.get_running_loop()
        delay_ms = backoff.delay_ms(loop.time() * 1000)
        if delay_ms:
            await asyncio.sleep(delay_ms / 1000)
        connection = self._new_connection(broker.host, broker.port)
        try:
            await connection.connect()
        except KafkaConnectionError:
            backoff.record_failure(loop.time() * 1000)
            raise
        backoff.record_success()
        stale = self._connections.pop(node_id, None)
        if stale is not None:
            await stale.close()
        self._connections[node_id] = connection
        return connection

    def _new_connection(self, host: str, port: int) -> BrokerConnection:
        return BrokerConnection(
            host,
            port,
            client_id=self.client_id,
            ssl_context=self.config.ssl_context,
            sasl=self.config.sasl,
            request_timeout_ms=self.config.request_timeout_ms,
            stats=self.network,
        )

    def _merge(self, fresh: ClusterMetadata, asked: list[str] | None) -> None:
        healthy = {n: t for n, t in fresh.topics.items() if t.error == ErrorCode.NONE}
        if asked is None:
            topics = healthy
        else:
            topics = {n: t for n, t in self._metadata.topics.items() if n not in asked}
            topics.update(healthy)
        self._metadata = ClusterMetadata(
            fresh.cluster_id, fresh.controller_id, fresh.brokers, topics
        )

    def _learn_broker(self, broker: BrokerInfo) -> None:
        if broker.node_id in self.brokers:
            return
        brokers = {**self.brokers, broker.node_id: broker}
        current = self._metadata
        self._metadata = ClusterMetadata(
            current.cluster_id, current.controller_id, brokers, current.topics
        )


def _start(connection: BrokerConnection, body: Any) -> InFlightRequest:
    """Write ``body`` (a message, or a spec built at the connection's best version)."""
    if isinstance(body, RequestSpec):
        body = _build_for(connection, body)
    return connection.start(body)


def _build_for(connection: BrokerConnection, spec: RequestSpec) -> Any:
    ours = spec.versions if spec.versions is not None else versions_we_have(spec.api_key)
    return build_request(spec.api_key, negotiated(connection, spec.api_key, ours), spec.fields)


def negotiated(connection: BrokerConnection, api_key: int, ours: Iterable[int]) -> int:
    """The highest of ``ours`` the broker behind ``connection`` supports: the version to
    build a request at. ``UnsupportedVersion`` when there is none."""
    ours = tuple(ours)
    version = connection.max_supported(api_key, ours)
    if version is None:
        supported = connection.api_versions.get(api_key)
        raise UnsupportedVersion(api_key, max(ours, default=-1), supported)
    return version


def _metadata_spec(topics: list[str] | None) -> RequestSpec:
    return RequestSpec(
        METADATA_KEY,
        {
            "topics": None if topics is None else [{"name": t, "topic_id": None} for t in topics],
            "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False,
        },
        # v0 cannot ask for "no topics" (an empty list meant "all"), so start at v1.
        versions=tuple(v for v in versions_we_have(METADATA_KEY) if v >= 1),
    )


def _metadata_from_response(response: Any) -> ClusterMetadata:
    """The cluster view of a Metadata response of any version.

    Runs for every partition of every refresh (thousands during a failover), so it reads
    fields directly: the decoded ids are already ints and id lists already tuples, the
    fields a version may lack are probed once per response, and error codes are mapped
    through a cache.
    """
    brokers = {
        b.node_id: BrokerInfo(b.node_id, b.host, b.port, getattr(b, "rack", None))
        for b in response.brokers
    }
    topics = {}
    for t in response.topics:
        if t.name is None:
            continue
        partitions = {}
        versioned: tuple[bool, bool] | None = None
        for p in t.partitions:
            if versioned is None:
                versioned = (hasattr(p, "leader_epoch"), hasattr(p, "offline_replicas"))
            has_epoch, has_offline = versioned
            partitions[p.partition_index] = PartitionInfo(
                p.partition_index,
                p.leader_id,
                p.leader_epoch if has_epoch else -1,
                _int_tuple(p.replica_nodes),
                _int_tuple(p.isr_nodes),
                _int_tuple(p.offline_replicas) if has_offline else (),
                _error(p.error_code),
            )
        topic_id = getattr(t, "topic_id", None)
        topics[t.name] = TopicInfo(
            name=t.name,
            topic_id=topic_id if topic_id is not None and topic_id.int else None,
            is_internal=bool(getattr(t, "is_internal", False)),
            partitions=partitions,
            error=_error(t.error_code),
        )
    return ClusterMetadata(
        cluster_id=getattr(response, "cluster_id", None),
        controller_id=int(getattr(response, "controller_id", -1)),
        brokers=brokers,
        topics=topics,
    )


def _int_tuple(values: Iterable[int]) -> tuple[int, ...]:
    return values if isinstance(values, tuple) else tuple(values)


@cache
def _error(code: int) -> ErrorCode | int:
    return error_code_from_wire(int(code))
