"""The rules of KIP-848 consumer groups, as tables: member reconciliation and group state.

Theory of operation (Kafka's CurrentAssignmentBuilder): the coordinator computes a target
assignment per member for the group's assignment epoch. A member moves towards its target
one heartbeat at a time, and a partition is only ever held by one member:

- a member first gives up what it must lose. Until its heartbeat reports owned partitions
  without them it stays UNREVOKED_PARTITIONS at its current epoch;
- then it takes the target epoch and every target partition no other member still holds
  (assigned or being revoked). Partitions still held elsewhere wait: the member is
  UNRELEASED_PARTITIONS until a later heartbeat finds them released;
- with everything in hand the member is STABLE at the target epoch.

`OUTCOMES` decides the next state from what is left to revoke and what is still held by
others; `WAITS_FOR` says what a member in each state needs before it is reconciled again.
`GROUP_STATES` derives the group's state (Kafka's Empty, Assigning, Reconciling, Stable).
"""

from __future__ import annotations

import enum
from collections.abc import Container
from dataclasses import dataclass

from mirrorsim.broker.group.offset_store import TopicPartition


class MemberState(enum.Enum):
    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    UNRELEASED_PARTITIONS = "unreleased_partitions"


class Wait(enum.Enum):
    NEW_TARGET = enum.auto()
    """Reconciled again only once the target epoch differs from the member's epoch."""
    REVOCATION = enum.auto()
    """Reconciled again only once a heartbeat reports none of the revoked partitions."""
    RELEASE = enum.auto()
    """Reconciled on every heartbeat: another member may have released a partition."""


class ConsumerGroupState(enum.Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


_M = MemberState

OUTCOMES: dict[tuple[bool, bool], tuple[MemberState, bool]] = {
    # (partitions to revoke, target partitions held by others): (next state, takes target epoch)
    (True, False): (_M.UNREVOKED_PARTITIONS, False),
    (True, True): (_M.UNREVOKED_PARTITIONS, False),
    (False, True): (_M.UNRELEASED_PARTITIONS, True),
    (False, False): (_M.STABLE, True),
}

WAITS_FOR: dict[MemberState, Wait] = {
    _M.STABLE: Wait.NEW_TARGET,
    _M.UNREVOKED_PARTITIONS: Wait.REVOCATION,
    _M.UNRELEASED_PARTITIONS: Wait.RELEASE,
}

_G = ConsumerGroupState

GROUP_STATES: dict[tuple[bool, bool, bool], ConsumerGroupState] = {
    # (has members, target behind the group epoch, every member stable at the target epoch)
    (False, False, False): _G.EMPTY,
    (False, False, True): _G.EMPTY,
    (False, True, False): _G.EMPTY,
    (False, True, True): _G.EMPTY,
    (True, True, False): _G.ASSIGNING,
    (True, True, True): _G.ASSIGNING,
    (True, False, False): _G.RECONCILING,
    (True, False, True): _G.STABLE,
}


@dataclass(frozen=True, slots=True)
class MemberAssignment:
    """What one member holds: `assigned` it may consume, `revoking` it must give up."""

    state: MemberState = MemberState.STABLE
    epoch: int = 0
    previous_epoch: int = -1
    assigned: frozenset[TopicPartition] = frozenset()
    revoking: frozenset[TopicPartition] = frozenset()

    @property
    def held(self) -> frozenset[TopicPartition]:
        return self.assigned | self.revoking


def reconcile(
    current: MemberAssignment,
    target_epoch: int,
    target: frozenset[TopicPartition],
    held_elsewhere: Container[TopicPartition],
    reported_owned: frozenset[TopicPartition] | None,
) -> MemberAssignment:
    """The member's next assignment, one step towards `target` at `target_epoch`.

    `reported_owned` is what the heartbeat says the member owns (None: unchanged since
    its last heartbeat)."""
    wait = WAITS_FOR[current.state]
    if wait is Wait.NEW_TARGET and current.epoch == target_epoch:
        return current
    if wait is Wait.REVOCATION and (reported_owned is None or reported_owned & current.revoking):
        return current
    keep = current.assigned & target
    revoke = current.assigned - target
    wanted = target - keep
    free = frozenset(tp for tp in wanted if tp not in held_elsewhere)
    state, takes_target_epoch = OUTCOMES[(bool(revoke), bool(wanted - free))]
    if not takes_target_epoch:
        return MemberAssignment(state, current.epoch, current.previous_epoch, keep, revoke)
    previous = current.previous_epoch if current.epoch == target_epoch else current.epoch
    return MemberAssignment(state, target_epoch, previous, keep | free, frozenset())


def group_state(
    has_members: bool, target_behind: bool, all_stable_at_target: bool
) -> ConsumerGroupState:
    return GROUP_STATES[(has_members, target_behind, all_stable_at_target)]
