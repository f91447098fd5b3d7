"""Leader elections and ISR cleanup as pure functions of a partition and the live brokers.

Kafka's rules:
- clean election: the first replica, in assignment order, that is live and in the ISR;
- unclean election (``unclean.leader.election.enable=true`` or ElectLeaders UNCLEAN):
  when no ISR member is live, the first live replica; the ISR becomes just that replica
  and everything it lacks is lost;
- preferred election: the first replica of the assignment, if it is live and in the ISR;
- a broker that is no longer live leaves the ISR, except the last member: the ISR never
  becomes empty, so that replica can become leader again cleanly when it comes back;
- every leader change (to ``NO_LEADER`` too) bumps the leader epoch.
"""

from __future__ import annotations

import enum
from collections.abc import Collection

from mirrorsim.broker.metadata.models import PartitionAssignment
from mirrorsim.protocol.errors import ErrorCode, KafkaError

NO_LEADER = -1


class ElectionType(enum.IntEnum):
    """ElectLeaders' ``election_type``."""

    PREFERRED = 0
    UNCLEAN = 1


def _with_leader(
    current: PartitionAssignment, leader: int, isr: tuple[int, ...]
) -> PartitionAssignment:
    epoch = current.leader_epoch + 1 if leader != current.leader else current.leader_epoch
    return PartitionAssignment(current.partition, current.replicas, leader, epoch, isr)


def plan_partition(
    current: PartitionAssignment, live: Collection[int], *, unclean_allowed: bool
) -> PartitionAssignment:
    """The partition after removing dead brokers from the ISR and re-electing if needed."""
    isr = tuple(r for r in current.isr if r in live) or current.isr
    if current.leader in live and current.leader in isr:
        return _with_leader(current, current.leader, isr)
    clean = next((r for r in current.replicas if r in live and r in isr), None)
    if clean is not None:
        return _with_leader(current, clean, isr)
    if unclean_allowed:
        unclean = next((r for r in current.replicas if r in live), None)
        if unclean is not None:
            return _with_leader(current, unclean, (unclean,))
    return _with_leader(current, NO_LEADER, isr)


def elect_leader(
    current: PartitionAssignment, live: Collection[int], election_type: ElectionType
) -> PartitionAssignment:
    """ElectLeaders for one partition; raises ``KafkaError`` with Kafka's per-partition code."""
    if election_type is ElectionType.PREFERRED:
        preferred = current.replicas[0]
        if current.leader == preferred:
            raise KafkaError(ErrorCode.ELECTION_NOT_NEEDED)
        if preferred not in live or preferred not in current.isr:
            raise KafkaError(
                ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                f"Failed to elect leader for partition {current.partition} under strategy "
                "PreferredReplicaPartitionLeaderElectionStrategy",
            )
        return _with_leader(current, preferred, current.isr)
    if current.leader in live:
        raise KafkaError(ErrorCode.ELECTION_NOT_NEEDED)
    elected = plan_partition(current, live, unclean_allowed=True)
    if elected.leader == NO_LEADER:
        raise KafkaError(
            ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
            f"Failed to elect leader for partition {current.partition} under strategy "
            "UncleanPartitionLeaderElectionStrategy",
        )
    return elected
