"""Scrape-time views of a broker's mirror coordinator and its fetchers.

Each scrape reads the live partition statuses and fetcher tasks, so the gauges say what
DescribeMirrors would say at that instant: a partition's ConsumerLag is the source high
watermark its fetcher last saw minus the destination log end offset, the same figure as
the LAG column. Paused, preparing and failed partitions keep their lag (labelled with the
fetcher that last fetched them): the lag of a paused mirror is what an operator watches.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from mirrorsim.broker.metrics.mirror import (
    FetcherNetwork,
    MirrorFetcherView,
    MirrorMetrics,
    PartitionLag,
    fetcher_client_id,
)
from mirrorsim.broker.replica import ReplicaManager
from mirrorsim.coordinator.mirror_coordinator import MirrorCoordinator
from mirrorsim.coordinator.mirror_lag import mirror_lag
from mirrorsim.coordinator.state_machine import MirrorPartitionState
from mirrorsim.protocol.errors import KafkaError


def observe_mirrors(
    metrics: MirrorMetrics, coordinator: MirrorCoordinator, replicas: ReplicaManager
) -> None:
    """Register the scrape-time callbacks over the coordinator and the local replicas."""
    metrics.observe_fetchers(lambda: fetcher_view(metrics, coordinator, replicas))
    metrics.observe_partition_states(lambda: partition_state_counts(coordinator))


def partition_state_counts(coordinator: MirrorCoordinator) -> dict[MirrorPartitionState, int]:
    return dict(Counter(status.state for status in coordinator.partitions.values()))


def fetcher_view(
    metrics: MirrorMetrics, coordinator: MirrorCoordinator, replicas: ReplicaManager
) -> MirrorFetcherView:
    fetching: dict[tuple[str, int], str] = {}
    live: list[str] = []
    networks: list[FetcherNetwork] = []
    dead = 0
    for key, task in coordinator.fetchers.fetchers.items():
        client_id = fetcher_client_id(key.source_broker, key.fetcher_id, key.mirror)
        if task.dead:
            dead += 1
            continue
        live.append(client_id)
        networks.append(_network(task.client, key))
        fetching.update(dict.fromkeys(task.partitions, client_id))
    statuses = coordinator.partitions
    metrics.forget_partitions_except(statuses)
    lags = []
    for key, status in statuses.items():
        client_id = fetching.get(key) or metrics.last_fetcher_of(key)
        lag = _lag(replicas, key, status.source_high_watermark)
        if client_id is not None and lag is not None:
            lags.append(PartitionLag(client_id, key[0], key[1], lag))
    return MirrorFetcherView(
        partition_lags=lags,
        dead_thread_count=dead,
        failed_partitions_count=sum(
            1
            for s in statuses.values()
            if s.state is MirrorPartitionState.FAILED or s.failure is not None
        ),
        min_fetch_rate=min((metrics.fetch_rate(c) for c in live), default=0.0),
        throttled_byte_rate=coordinator.fetchers.quota.byte_rate(),
        networks=networks,
    )


def _network(client: Any, key: Any) -> FetcherNetwork:
    stats = client.network
    return FetcherNetwork(
        client_id=client.client_id,
        source_broker=key.source_broker,
        fetcher_id=key.fetcher_id,
        connection_count=stats.connection_count,
        connections_created=stats.connections_created,
        connections_closed=stats.connections_closed,
        requests=stats.requests,
        responses=stats.responses,
        bytes_sent=stats.bytes_sent,
        bytes_received=stats.bytes_received,
    )


def _lag(replicas: ReplicaManager, key: tuple[str, int], source_high_watermark: int) -> int | None:
    """DescribeMirrors' LAG for ``key``; None where it reports -1 (an offset is unknown)."""
    try:
        destination = replicas.partition(*key).log_end_offset
    except KafkaError:
        return None
    return mirror_lag(source_high_watermark, destination)
