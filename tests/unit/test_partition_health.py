"""Kafka's partition health counts from a broker's partitions and the controller's view."""

from __future__ import annotations

from dataclasses import dataclass, field

from mirrorsim.broker.metadata.models import NO_LEADER, PartitionAssignment
from mirrorsim.broker.metrics.partition_health import (
    ControllerHealth,
    ReplicaHealth,
    controller_health,
    replica_health,
)


@dataclass(frozen=True)
class State:
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    min_isr: int = 2

    def min_insync_replicas(self) -> int:
        return self.min_isr


@dataclass(frozen=True)
class Hosted:
    is_leader: bool
    state: State = field(default_factory=lambda: State((1, 2, 3), (1, 2, 3)))

    @property
    def under_min_isr(self) -> bool:
        return len(self.state.isr) < self.state.min_insync_replicas()


def assignment(leader: int, replicas: tuple[int, ...] = (0, 1, 2)) -> PartitionAssignment:
    return PartitionAssignment(0, replicas, leader, 1, replicas)


def test_only_led_partitions_count_as_under_replicated() -> None:
    partitions = [
        Hosted(True),
        Hosted(True, State((1, 2, 3), (1, 2))),
        Hosted(True, State((1, 2, 3), (1,))),
        Hosted(False, State((1, 2, 3), (2,))),
    ]
    assert replica_health(partitions) == ReplicaHealth(
        partition_count=4, leader_count=3, under_replicated=2, under_min_isr=1, at_min_isr=1
    )


def test_a_leader_other_than_the_first_replica_is_imbalanced() -> None:
    """Kafka's controller metrics: leader 1 of replicas [0, 1, 2] is imbalanced; a
    partition without a leader is offline, and not led by its preferred replica either."""
    health = controller_health(
        {
            "balanced": [assignment(0)],
            "moved": [assignment(1)],
            "offline": [assignment(NO_LEADER)],
            "reordered": [assignment(2, (2, 0, 1)), assignment(0, (1, 0, 2))],
        },
        {1: False, 2: False, 3: True},
    )
    assert health == ControllerHealth(
        active_controller=1,
        topic_count=4,
        partition_count=5,
        offline_partitions=1,
        preferred_replica_imbalance=3,
        active_brokers=2,
        fenced_brokers=1,
    )


def test_a_broker_that_is_not_the_controller_reports_zeros() -> None:
    assert ControllerHealth() == ControllerHealth(0, 0, 0, 0, 0, 0, 0)
