"""The KIP-1279 metric table, Prometheus-style.

Two kinds of source: events the fetchers and the metadata manager push as they happen
(bytes fetched, sync errors: counters), and state read from the live components at scrape
time through callbacks (lags, failed partitions, partition-state counts: gauges), so the
gauges can never drift from the state they describe. Components register their callback
once at start (``observe_fetchers``, ``observe_partition_states``); without one the gauges
read 0. Each fetcher records through its own ``FetcherStats`` handle, which carries Kafka's
labels for it.

JMX → Prometheus names are listed in docs/operations.md.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from mirrorsim.broker.metrics.rate import RateMeter
from mirrorsim.coordinator.state_machine import MirrorPartitionState

MIRROR_REPLICA_CLIENT_ID = "MirrorReplica"
PARTITION_STATE_GAUGES: dict[MirrorPartitionState, str] = {
    MirrorPartitionState.MIRRORING: "mirroring",
    MirrorPartitionState.PREPARING: "preparing",
    MirrorPartitionState.STOPPING: "stopping",
    MirrorPartitionState.STOPPED: "stopped",
    MirrorPartitionState.FAILED: "failed",
    MirrorPartitionState.PAUSED: "paused",
}
"""The spec's partition-state gauges (and PAUSED, which an operator of a paused mirror
watches), each named after its state."""

STATES_WITHOUT_GAUGE: dict[MirrorPartitionState, str] = {
    MirrorPartitionState.PAUSING: "lasts one step (the fetcher's removal); the spec has none",
    MirrorPartitionState.UNKNOWN: "a partition the coordinator does not drive is not counted",
}
"""States deliberately not exported, and why: with the gauges, every state is named."""


def fetcher_client_id(source_broker_id: int, fetcher_id: int, mirror: str) -> str:
    """Kafka's client id of a mirror fetcher thread (the ConsumerLag/FetcherStats tag)."""
    return f"MirrorFetcherThread-{source_broker_id}-{fetcher_id}-{mirror}"


class SyncError(enum.Enum):
    METADATA_REFRESH = "metadata_refresh_error"
    TOPIC_CONFIG = "topic_config_metadata_sync_error"
    CONSUMER_GROUP_OFFSET = "consumer_group_offset_sync_error"
    ACL = "acl_sync_error"


@dataclass(frozen=True, slots=True)
class PartitionLag:
    client_id: str
    topic: str
    partition: int
    lag: int


@dataclass(frozen=True, slots=True)
class FetcherNetwork:
    """One live fetcher's client network totals (the spec's
    ``mirror-broker-{id}-fetcher-{n}-mirror-{name}-metrics``)."""

    client_id: str
    source_broker: int
    fetcher_id: int
    connection_count: int
    connections_created: int
    connections_closed: int
    requests: int
    responses: int
    bytes_sent: int
    bytes_received: int


FETCHER_NETWORK_COUNTERS = (
    ("connection_creations", "connections_created", "Connections opened (connection-creation)."),
    ("connection_closes", "connections_closed", "Connections closed (connection-close)."),
    ("requests", "requests", "Requests sent (request)."),
    ("responses", "responses", "Responses received (response)."),
    ("outgoing_bytes", "bytes_sent", "Bytes sent (outgoing-byte)."),
    ("incoming_bytes", "bytes_received", "Bytes received (incoming-byte)."),
)
"""(metric suffix, ``FetcherNetwork`` field, help) of each fetcher network counter."""


@dataclass(frozen=True, slots=True)
class MirrorFetcherView:
    """What the mirror fetcher manager reports at scrape time."""

    partition_lags: Sequence[PartitionLag] = ()
    dead_thread_count: int = 0
    failed_partitions_count: int = 0
    min_fetch_rate: float = 0.0
    throttled_byte_rate: float = 0.0
    """Bytes/s fetched for throttled mirror partitions (the quota's own measure)."""
    networks: Sequence[FetcherNetwork] = ()


class MirrorMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self._fetchers: Callable[[], MirrorFetcherView] = MirrorFetcherView
        self._partition_states: Callable[[], Mapping[str, int]] = dict
        self._fetch_rates: dict[str, RateMeter] = {}
        self._fetched_by: dict[tuple[str, int], str] = {}
        fetcher_labels = ["client_id", "broker_host", "broker_port", "mirror_name"]
        self.fetcher_bytes = Counter(
            "kafka_server_fetcher_stats_bytes",
            "Bytes fetched by a mirror fetcher (BytesPerSec).",
            fetcher_labels,
            registry=registry,
        )
        self.fetcher_requests = Counter(
            "kafka_server_fetcher_stats_requests",
            "Fetch requests sent by a mirror fetcher (RequestsPerSec).",
            fetcher_labels,
            registry=registry,
        )
        self.replication_bytes = Counter(
            "kafka_server_mirror_replication_bytes",
            "Bytes of mirror replication appended (MirrorReplication ByteRate).",
            registry=registry,
        )
        self.sync_errors = {
            kind: Counter(
                f"kafka_server_mirror_{kind.value}",
                f"MirrorMetadataManager {kind.name} errors.",
                registry=registry,
            )
            for kind in SyncError
        }
        registry.register(_LiveStateCollector(self))

    def observe_fetchers(self, view: Callable[[], MirrorFetcherView]) -> None:
        self._fetchers = view

    def observe_partition_states(
        self, counts: Callable[[], Mapping[MirrorPartitionState, int]]
    ) -> None:
        """``counts()`` maps a state to its partition count."""
        self._partition_states = counts

    def fetcher_stats(self, source_broker_id: int, fetcher_id: int, mirror: str) -> FetcherStats:
        return FetcherStats(self, fetcher_client_id(source_broker_id, fetcher_id, mirror), mirror)

    def record_fetch(
        self,
        *,
        client_id: str,
        broker_host: str,
        broker_port: int,
        mirror: str,
        size: int,
        partitions: Iterable[tuple[str, int]] = (),
    ) -> None:
        """One fetch response received from a source broker; ``size`` bytes were appended.

        ``partitions`` are the (topic, partition) the request asked for: a partition keeps
        the client id of the fetcher that last fetched it, so its lag stays labelled the
        same while it is paused.
        """
        labels = (client_id, broker_host, str(broker_port), mirror)
        self.fetcher_requests.labels(*labels).inc()
        self.fetcher_bytes.labels(*labels).inc(size)
        self.replication_bytes.inc(size)
        self._fetch_rates.setdefault(client_id, RateMeter()).mark()
        for key in partitions:
            self._fetched_by[key] = client_id

    def fetch_rate(self, client_id: str) -> float:
        """Fetch responses per second of one fetcher over the last minute."""
        meter = self._fetch_rates.get(client_id)
        return 0.0 if meter is None else meter.rate()

    def last_fetcher_of(self, key: tuple[str, int]) -> str | None:
        """The client id of the fetcher that last fetched ``key``, if any did."""
        return self._fetched_by.get(key)

    def forget_partitions_except(self, keys: Iterable[tuple[str, int]]) -> None:
        """Drop what is remembered of partitions this broker no longer drives."""
        kept = set(keys)
        for key in [k for k in self._fetched_by if k not in kept]:
            del self._fetched_by[key]

    def record_sync_error(self, kind: SyncError) -> None:
        self.sync_errors[kind].inc()

    def fetcher_view(self) -> MirrorFetcherView:
        return self._fetchers()

    def partition_state_counts(self) -> Mapping[MirrorPartitionState, int]:
        return self._partition_states()


@dataclass(frozen=True, slots=True)
class FetcherStats:
    """Kafka's FetcherStats of one mirror fetcher: its client id and mirror, bound."""

    metrics: MirrorMetrics
    client_id: str
    mirror: str

    def record_fetch(
        self,
        *,
        broker_host: str,
        broker_port: int,
        size: int,
        partitions: Iterable[tuple[str, int]],
    ) -> None:
        self.metrics.record_fetch(
            client_id=self.client_id,
            broker_host=broker_host,
            broker_port=broker_port,
            mirror=self.mirror,
            size=size,
            partitions=partitions,
        )


class _LiveStateCollector(Collector):
    def __init__(self, metrics: MirrorMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        view = self._metrics.fetcher_view()
        manager = ["client_id"]
        client = [MIRROR_REPLICA_CLIENT_ID]
        max_lag = max((p.lag for p in view.partition_lags), default=0)
        for name, doc, value in (
            ("max_lag", "Max lag in messages behind the source leaders.", max_lag),
            ("min_fetch_rate", "Min fetch rate of the mirror fetchers.", view.min_fetch_rate),
            ("dead_threads", "Mirror fetchers that died.", view.dead_thread_count),
            (
                "failed_partitions",
                "Partitions failed (auth, authorization, network...).",
                view.failed_partitions_count,
            ),
        ):
            family = GaugeMetricFamily(f"kafka_server_mirror_{name}", doc, labels=manager)
            family.add_metric(client, value)
            yield family
        yield GaugeMetricFamily(
            "kafka_server_mirror_replication_byte_rate",
            "Throttled mirror replication rate in bytes/sec (MirrorReplication ByteRate).",
            value=view.throttled_byte_rate,
        )
        lag = GaugeMetricFamily(
            "kafka_server_fetcher_lag_consumer_lag",
            "Lag in messages per source leader replica.",
            labels=["client_id", "topic", "partition"],
        )
        for p in view.partition_lags:
            lag.add_metric([p.client_id, p.topic, str(p.partition)], p.lag)
        yield lag
        yield from _fetcher_network(view.networks)
        counts = self._metrics.partition_state_counts()
        for state, name in PARTITION_STATE_GAUGES.items():
            yield GaugeMetricFamily(
                f"kafka_server_mirror_{name}_partition_state",
                f"Partitions in {state.name} state.",
                value=counts.get(state, 0),
            )


def _fetcher_network(
    networks: Sequence[FetcherNetwork],
) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
    labels = ["client_id", "broker_id", "fetcher_id"]
    prefix = "kafka_server_mirror_fetcher_network"
    count = GaugeMetricFamily(
        f"{prefix}_connections", "Connections open now (connection-count).", labels=labels
    )
    for n in networks:
        count.add_metric([n.client_id, str(n.source_broker), str(n.fetcher_id)], n.connection_count)
    yield count
    for suffix, field_name, help_text in FETCHER_NETWORK_COUNTERS:
        family = CounterMetricFamily(f"{prefix}_{suffix}", help_text, labels=labels)
        for n in networks:
            family.add_metric(
                [n.client_id, str(n.source_broker), str(n.fetcher_id)], getattr(n, field_name)
            )
        yield family
