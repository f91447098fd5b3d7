"""The controller role: one active controller per cluster, broker liveness and elections.

Every broker runs a ``ClusterController``; the one holding the lease row in the metadata
store is the active controller. It watches broker heartbeats and elects partition leaders
when a broker fails or shuts down. Elections and ISR changes are compare-and-set writes of
the partition row (``alter_partition``), so a stale controller or a stale leader loses.
"""

from mirrorsim.broker.controller.active import ClusterController
from mirrorsim.broker.controller.alter_partition import PartitionWriter
from mirrorsim.broker.controller.election import (
    NO_LEADER,
    ElectionType,
    elect_leader,
    plan_partition,
)
from mirrorsim.broker.controller.lease import ControllerLease, LeaseState

__all__ = [
    "NO_LEADER",
    "ClusterController",
    "ControllerLease",
    "ElectionType",
    "LeaseState",
    "PartitionWriter",
    "elect_leader",
    "plan_partition",
]
