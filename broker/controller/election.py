"""Leader elections and ISR cleanup as pure functions of a partition and the live brokers.

Kafka's rules:
- clean election: the first replica, in assignment order, that is live and in the ISR;
- unclean election (``unclean.leader.election.enable=true`` or ElectLeaders UNCLEAN):
  when no ISR member is live, the first live replica; the ISR becomes just that replica
  and everything it lacks is lost;
- preferred election: the first replica of the assignment, if it is live and in the ISR;
  the active controller also runs it on its own (``auto.leader.rebalance.enable``) for
  every partition led elsewhere whose preferred replica is back (``rebalanced``);
- a broker that is no longer live leaves the ISR, except the last member: the ISR never
  becomes empty, so that replica can become leader again cleanly when it comes back;
- every leader change (to ``NO_LEADER`` too) bumps the leader epoch;
- a new broker incarnation (KIP-841, KIP-966) is fenced: it counts as not live, so it
  leaves every ISR that has another live member and loses its leaderships, and it is
  unfenced only once no partition names it leader and no ISR with another live member
  holds it (``may_unfence``). Its log may have lost a tail its old incarnation had
  acknowledged (a power cut); it rejoins ISRs as a follower that caught up.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Iterable

from mirrorsim.broker.metadata.models import NO_LEADER, PartitionAssignment
from mirrorsim.protocol.errors import ErrorCode, KafkaError


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


def may_unfence(
    broker_id: int, partitions: Iterable[PartitionAssignment], live: Collection[int]
) -> bool:
    """Whether a fenced incarnation's old roles are gone: it leads nothing and is in no ISR
    that has another live member (the last member of an ISR keeps its place, so that it
    can lead again once unfenced, as after a clean shutdown)."""
    for partition in partitions:
        if partition.leader == broker_id:
            return False
        if broker_id in partition.isr and any(r != broker_id and r in live for r in partition.isr):
            return False
    return True


def rebalanced(current: PartitionAssignment, live: Collection[int]) -> PartitionAssignment | None:
    """The partition led by its preferred replica, when another replica leads it and the
    preferred one is live and in the ISR (Kafka's KRaft controller, which has no
    per-broker imbalance threshold); otherwise None."""
    preferred = current.preferred_replica
    if current.leader == preferred or preferred not in live or preferred not in current.isr:
        return None
    return _with_leader(current, preferred, current.isr)


def elect_leader(
    current: PartitionAssignment, live: Collection[int], election_type: ElectionType
) -> PartitionAssignment:
    """ElectLeaders for one partition; raises ``KafkaError`` with Kafka's per-partition code."""
    if election_type is ElectionType.PREFERRED:
        if current.leader == current.preferred_replica:
            raise KafkaError(ErrorCode.ELECTION_NOT_NEEDED)
        elected = rebalanced(current, live)
        if elected is None:
            raise KafkaError(
                ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                f"Failed to elect leader for partition {current.partition} under strategy "
                "PreferredReplicaPartitionLeaderElectionStrategy",
            )
        return elected
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
