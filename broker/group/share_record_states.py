"""The rules of a KIP-932 share partition's records, as a table.

Theory of operation: a record in a share partition is AVAILABLE until a member acquires
it; every acquisition is a delivery and counts. The member holds the record under a time
lock and settles it: ACCEPT makes it ACKNOWLEDGED, REJECT and GAP archive it, RELEASE hands
it back as AVAILABLE for another delivery. A lock that runs out (LOCK_EXPIRED) and a member
that leaves (MEMBER_GONE) hand it back the same way. ACKNOWLEDGED and ARCHIVED are terminal:
the share partition's start offset moves past them.

GAP also archives an AVAILABLE record: the log holds nothing deliverable at that offset (a
control batch, or an offset compaction removed), so waiting for a delivery would stall the
start offset for ever.

The delivery limit (``group.share.delivery.count.limit``) keeps a poison record from
cycling: once a record has been delivered `limit` times, any event in `LIMITED_EVENTS`
archives it instead of making it available, or delivering it, again. ACQUIRE is limited too,
because a record held when the leader crashed comes back AVAILABLE with its count already
at the limit.
"""

from __future__ import annotations

import enum

from mirrorsim.broker.group.share_state import AcknowledgeType, RecordState


class Event(enum.Enum):
    ACQUIRE = enum.auto()
    ACCEPT = enum.auto()
    RELEASE = enum.auto()
    REJECT = enum.auto()
    GAP = enum.auto()
    LOCK_EXPIRED = enum.auto()
    MEMBER_GONE = enum.auto()


_S = RecordState
_E = Event

TRANSITIONS: dict[tuple[RecordState, Event], RecordState] = {
    (_S.AVAILABLE, _E.ACQUIRE): _S.ACQUIRED,
    (_S.AVAILABLE, _E.GAP): _S.ARCHIVED,
    (_S.ACQUIRED, _E.ACCEPT): _S.ACKNOWLEDGED,
    (_S.ACQUIRED, _E.REJECT): _S.ARCHIVED,
    (_S.ACQUIRED, _E.GAP): _S.ARCHIVED,
    (_S.ACQUIRED, _E.RELEASE): _S.AVAILABLE,
    (_S.ACQUIRED, _E.LOCK_EXPIRED): _S.AVAILABLE,
    (_S.ACQUIRED, _E.MEMBER_GONE): _S.AVAILABLE,
}

LIMITED_EVENTS: frozenset[Event] = frozenset(
    {_E.ACQUIRE, _E.RELEASE, _E.LOCK_EXPIRED, _E.MEMBER_GONE}
)
"""Events that archive a record which has been delivered `delivery_count_limit` times."""

TERMINAL: frozenset[RecordState] = frozenset(
    state for state in RecordState if not any(key[0] is state for key in TRANSITIONS)
)
"""States no event leaves: the start offset moves past a prefix of them."""

ACKNOWLEDGE_EVENTS: dict[AcknowledgeType, Event] = {
    AcknowledgeType.GAP: _E.GAP,
    AcknowledgeType.ACCEPT: _E.ACCEPT,
    AcknowledgeType.RELEASE: _E.RELEASE,
    AcknowledgeType.REJECT: _E.REJECT,
}


class IllegalRecordTransition(Exception):
    def __init__(self, state: RecordState, event: Event) -> None:
        super().__init__(f"record in state {state.name} cannot handle {event.name}")
        self.state = state
        self.event = event


def next_state(state: RecordState, event: Event, delivery_count: int, limit: int) -> RecordState:
    """The state a record in `state`, delivered `delivery_count` times so far, moves to."""
    try:
        target = TRANSITIONS[(state, event)]
    except KeyError:
        raise IllegalRecordTransition(state, event) from None
    if event in LIMITED_EVENTS and delivery_count >= limit:
        return RecordState.ARCHIVED
    return target
