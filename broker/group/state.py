"""The classic group state machine, as a table.

Theory of operation: a group is born Empty. Any membership change (a join, a leave, an
expired session, a changed subscription) moves it to PreparingRebalance, where the
coordinator waits for every known member to rejoin. When they have (or the rebalance
timeout fires) the generation is bumped: with members left the group goes to
CompletingRebalance and waits for the leader's SyncGroup; with none it returns to Empty.
The leader's assignment makes the group Stable. Dead is terminal: the group was deleted
or unloaded and must not be used again.
"""

from __future__ import annotations

import enum


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


class GroupEvent(enum.Enum):
    REBALANCE = enum.auto()
    JOIN_COMPLETED = enum.auto()
    ALL_MEMBERS_GONE = enum.auto()
    SYNC_COMPLETED = enum.auto()
    DELETED = enum.auto()


_S = GroupState
_E = GroupEvent

TRANSITIONS: dict[tuple[GroupState, GroupEvent], GroupState] = {
    (_S.EMPTY, _E.REBALANCE): _S.PREPARING_REBALANCE,
    (_S.STABLE, _E.REBALANCE): _S.PREPARING_REBALANCE,
    (_S.COMPLETING_REBALANCE, _E.REBALANCE): _S.PREPARING_REBALANCE,
    (_S.PREPARING_REBALANCE, _E.JOIN_COMPLETED): _S.COMPLETING_REBALANCE,
    (_S.PREPARING_REBALANCE, _E.ALL_MEMBERS_GONE): _S.EMPTY,
    (_S.COMPLETING_REBALANCE, _E.SYNC_COMPLETED): _S.STABLE,
    (_S.EMPTY, _E.DELETED): _S.DEAD,
    (_S.PREPARING_REBALANCE, _E.DELETED): _S.DEAD,
    (_S.COMPLETING_REBALANCE, _E.DELETED): _S.DEAD,
    (_S.STABLE, _E.DELETED): _S.DEAD,
}


class IllegalGroupTransition(Exception):
    def __init__(self, state: GroupState, event: GroupEvent) -> None:
        super().__init__(f"group in state {state.value} cannot handle {event.name}")
        self.state = state
        self.event = event


def next_state(state: GroupState, event: GroupEvent) -> GroupState:
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise IllegalGroupTransition(state, event) from None
