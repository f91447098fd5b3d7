"""Kafka's partition health gauges, read at scrape time.

Two groups, as in Kafka:
- ``kafka.server:type=ReplicaManager``: what this broker holds and leads, and how many
  of the partitions it leads lack replicas in their ISR (UnderReplicatedPartitions,
  UnderMinIsrPartitionCount, AtMinIsrPartitionCount). Every broker reports its own.
- ``kafka.controller:type=KafkaController``: the cluster as the controller sees it
  (ActiveControllerCount, GlobalTopicCount, GlobalPartitionCount, OfflinePartitionsCount,
  PreferredReplicaImbalanceCount, ActiveBrokerCount, FencedBrokerCount). Only the active
  controller reports the real values; every other broker reports 0, so a dashboard sums
  or takes the maximum over the brokers.

A partition is offline when it has no leader, and imbalanced when its leader is not its
preferred replica (the first of its replicas), an offline one included, as Kafka's
controller counts them. Leader balancing (``auto.leader.rebalance.enable``) brings the
imbalance back to 0 once the preferred replicas are in their ISRs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import Protocol

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector


class HostedState(Protocol):
    """A hosted partition's replicas and ISR, as the controller last assigned them."""

    @property
    def replicas(self) -> Collection[int]: ...

    @property
    def isr(self) -> Collection[int]: ...

    def min_insync_replicas(self) -> int: ...


class HostedPartition(Protocol):
    """What the replica gauges read of one partition this broker holds."""

    @property
    def is_leader(self) -> bool: ...

    @property
    def under_min_isr(self) -> bool:
        """The replica manager's min-ISR rule, the one acks=all produce obeys."""

    @property
    def state(self) -> HostedState: ...


class AssignedPartition(Protocol):
    """What the controller gauges read of one partition of the cluster."""

    @property
    def has_leader(self) -> bool: ...

    @property
    def led_by_preferred(self) -> bool: ...


@dataclasses.dataclass(frozen=True, slots=True)
class ReplicaHealth:
    partition_count: int = 0
    leader_count: int = 0
    under_replicated: int = 0
    under_min_isr: int = 0
    at_min_isr: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class ControllerHealth:
    """The active controller's view; all zeros on any other broker."""

    active_controller: int = 0
    topic_count: int = 0
    partition_count: int = 0
    offline_partitions: int = 0
    preferred_replica_imbalance: int = 0
    active_brokers: int = 0
    fenced_brokers: int = 0


def replica_health(partitions: Iterable[HostedPartition]) -> ReplicaHealth:
    hosted = led = under = under_min = at_min = 0
    for partition in partitions:
        hosted += 1
        if not partition.is_leader:
            continue
        led += 1
        state = partition.state
        in_sync = len(state.isr)
        under += in_sync < len(state.replicas)
        under_min += partition.under_min_isr
        at_min += in_sync == state.min_insync_replicas()
    return ReplicaHealth(hosted, led, under, under_min, at_min)


def controller_health(
    topics: Mapping[str, Iterable[AssignedPartition]], brokers: Mapping[int, bool]
) -> ControllerHealth:
    """``topics``: each topic's partitions; ``brokers``: whether each registered broker is
    fenced, a broker whose session ran out counted as fenced (Kafka's controller fences
    it)."""
    partitions = offline = imbalanced = 0
    for assignments in topics.values():
        for partition in assignments:
            partitions += 1
            offline += not partition.has_leader
            imbalanced += not partition.led_by_preferred
    fenced = sum(brokers.values())
    return ControllerHealth(
        1, len(topics), partitions, offline, imbalanced, len(brokers) - fenced, fenced
    )


_REPLICA_GAUGES = (
    ("partition_count", "partitions", "PartitionCount", "Partitions this broker holds."),
    ("leader_count", "leaders", "LeaderCount", "Partitions this broker leads."),
    (
        "under_replicated",
        "under_replicated_partitions",
        "UnderReplicatedPartitions",
        "Partitions led here whose ISR is smaller than their replicas.",
    ),
    (
        "under_min_isr",
        "under_min_isr_partitions",
        "UnderMinIsrPartitionCount",
        "Partitions led here whose ISR is smaller than min.insync.replicas.",
    ),
    (
        "at_min_isr",
        "at_min_isr_partitions",
        "AtMinIsrPartitionCount",
        "Partitions led here whose ISR is exactly min.insync.replicas.",
    ),
)
"""(``ReplicaHealth`` field, metric name, Kafka's name, help). Prometheus names drop
Kafka's "Count" suffix: a gauge ending in ``_count`` reads as a histogram's."""
_CONTROLLER_GAUGES = (
    (
        "active_controller",
        "active_controller",
        "ActiveControllerCount",
        "1 on the active controller.",
    ),
    ("topic_count", "global_topics", "GlobalTopicCount", "Topics of the cluster."),
    ("partition_count", "global_partitions", "GlobalPartitionCount", "Partitions of the cluster."),
    (
        "offline_partitions",
        "offline_partitions",
        "OfflinePartitionsCount",
        "Partitions without a leader.",
    ),
    (
        "preferred_replica_imbalance",
        "preferred_replica_imbalance",
        "PreferredReplicaImbalanceCount",
        "Partitions whose leader is not their preferred replica.",
    ),
    (
        "active_brokers",
        "active_brokers",
        "ActiveBrokerCount",
        "Registered brokers in session and not fenced.",
    ),
    (
        "fenced_brokers",
        "fenced_brokers",
        "FencedBrokerCount",
        "Registered brokers fenced or out of session.",
    ),
)


class PartitionHealthMetrics:
    """The gauges; the broker says where to read them (``observe``)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._replicas: Callable[[], ReplicaHealth] = ReplicaHealth
        self._controller: Callable[[], ControllerHealth] = ControllerHealth
        registry.register(_HealthCollector(self))

    def observe(
        self, replicas: Callable[[], ReplicaHealth], controller: Callable[[], ControllerHealth]
    ) -> None:
        self._replicas = replicas
        self._controller = controller

    def replica_health(self) -> ReplicaHealth:
        return self._replicas()

    def controller_health(self) -> ControllerHealth:
        return self._controller()


class _HealthCollector(Collector):
    def __init__(self, metrics: PartitionHealthMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[GaugeMetricFamily]:
        replicas = self._metrics.replica_health()
        for field, name, kafka_name, help_text in _REPLICA_GAUGES:
            yield GaugeMetricFamily(
                f"kafka_server_replica_manager_{name}",
                f"{help_text} ({kafka_name})",
                value=getattr(replicas, field),
            )
        controller = self._metrics.controller_health()
        for field, name, kafka_name, help_text in _CONTROLLER_GAUGES:
            yield GaugeMetricFamily(
                f"kafka_controller_{name}",
                f"{help_text} ({kafka_name}; 0 but on the active controller)",
                value=getattr(controller, field),
            )
