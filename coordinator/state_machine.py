"""The lifecycle of one mirror partition (KIP-1279 "MirrorCoordinator").

Theory of operation
-------------------
Every mirror partition (a partition of a topic whose ``mirror.name`` config is set) is an
independent replication unit with one state. The partition leader is the only actor that
changes it; the coordinator owning the partition's ``__mirror_state`` key persists it.

The leader is *level-triggered*: whenever the topic config or the state changes, it asks
:func:`event_for_config` which single event (if any) moves the partition towards what the
config asks for, applies it with :func:`next_state`, persists the new state, runs the
state's entry actions (truncate, start or remove fetchers, stop), and asks again. So a
pause that arrives while the partition is still PREPARING is simply acted on once it is
MIRRORING; nothing is queued.

::

    UNKNOWN ──TOPIC_ADDED──▶ PREPARING ──TRUNCATION_COMPLETE──▶ MIRRORING
    STOPPED ──TOPIC_ADDED──▶ PREPARING ◀──LEADER_ELECTED──────── MIRRORING
    MIRRORING ──PAUSE_REQUESTED──▶ PAUSING ──FETCHERS_REMOVED──▶ PAUSED
    PAUSED ──RESUME_REQUESTED──▶ MIRRORING
    MIRRORING | PAUSED | FAILED | PREPARING | UNKNOWN ──STOP_REQUESTED──▶ STOPPING
    STOPPING ──STOP_COMPLETE──▶ STOPPED
    any ──FAILURE──▶ FAILED

The table is data (:data:`TRANSITIONS`); anything not in it raises
:class:`IllegalMirrorTransition` and leaves the caller's state untouched (states are
values, so there is nothing to corrupt). What the leader does on entering a state
(:data:`ENTRY_ACTIONS`) and the work of the transient states (:data:`IN_FLIGHT`) are data
next to it; the coordinator only maps each action to its code.

FAILED → STOPPING is not in the spec's "Valid from" list for STOPPING, but the spec's
FAILED paragraph prescribes exactly that restart path (remove the topic from the mirror,
whose STOPPING handler is safe on a failed partition, then add it back), so it is here.

PREPARING → STOPPING and UNKNOWN → STOPPING are not in that list either. A remove
(failover) may arrive while a partition is still preparing, for instance while the source
cannot answer LastMirroredEpochs, or before its leader has taken the add at all. Waiting
for PREPARING to finish would cut the log at the LME after the remove was accepted, and
a partition writable by its ``.removed`` suffix alone would lose what clients wrote
meanwhile; so a remove stops such a partition like any other: through STOPPING (LSO cut,
LME, epoch bump, MIRROR_PID_RESET) to STOPPED, the only state that accepts produce.
"""

from __future__ import annotations

import enum
import functools
import uuid
from dataclasses import dataclass

from mirrorsim.protocol.messages.mirror_state_records import MirrorPartitionStateId

PAUSED_SUFFIX = ".paused"
REMOVED_SUFFIX = ".removed"


class MirrorPartitionState(enum.IntEnum):
    """Partition states with the int8 ids of the wire (``MirrorPartitionStateId``)."""

    PREPARING = MirrorPartitionStateId.PREPARING
    MIRRORING = MirrorPartitionStateId.MIRRORING
    PAUSING = MirrorPartitionStateId.PAUSING
    PAUSED = MirrorPartitionStateId.PAUSED
    STOPPING = MirrorPartitionStateId.STOPPING
    STOPPED = MirrorPartitionStateId.STOPPED
    FAILED = MirrorPartitionStateId.FAILED
    UNKNOWN = MirrorPartitionStateId.UNKNOWN


NO_EPOCH = -1
"""The last mirrored epoch of a partition that has mirrored nothing."""


@dataclass(frozen=True, slots=True)
class StoredState:
    """A partition's state and last mirrored epoch as ``__mirror_state`` holds them."""

    state: MirrorPartitionState
    last_mirror_epoch: int


@dataclass(frozen=True, slots=True)
class StateUpdate:
    """A change to a stored state; None leaves that field as it is."""

    state: MirrorPartitionState | None = None
    last_mirror_epoch: int | None = None


class MirrorEvent(enum.Enum):
    TOPIC_ADDED = "topic added to the mirror (mirror.name set)"
    LEADER_ELECTED = "a new destination leader must re-align its log"
    TRUNCATION_COMPLETE = "every ISR member finished LME truncation"
    PAUSE_REQUESTED = "mirror.name got the .paused suffix"
    FETCHERS_REMOVED = "the partition's fetchers are gone"
    RESUME_REQUESTED = "the .paused suffix was removed"
    STOP_REQUESTED = "topic removed from the mirror (failover) or deleted on the source"
    STOP_COMPLETE = "LSO truncation, LME, epoch bump and MIRROR_PID_RESET are done"
    FAILURE = "an error the partition cannot recover from by itself"


S = MirrorPartitionState
E = MirrorEvent

TRANSITIONS: dict[tuple[MirrorPartitionState, MirrorEvent], MirrorPartitionState] = {
    (S.UNKNOWN, E.TOPIC_ADDED): S.PREPARING,
    (S.STOPPED, E.TOPIC_ADDED): S.PREPARING,
    (S.MIRRORING, E.LEADER_ELECTED): S.PREPARING,
    (S.PREPARING, E.TRUNCATION_COMPLETE): S.MIRRORING,
    (S.PAUSED, E.RESUME_REQUESTED): S.MIRRORING,
    (S.MIRRORING, E.PAUSE_REQUESTED): S.PAUSING,
    (S.PAUSING, E.FETCHERS_REMOVED): S.PAUSED,
    (S.MIRRORING, E.STOP_REQUESTED): S.STOPPING,
    (S.PAUSED, E.STOP_REQUESTED): S.STOPPING,
    (S.FAILED, E.STOP_REQUESTED): S.STOPPING,
    (S.PREPARING, E.STOP_REQUESTED): S.STOPPING,
    (S.UNKNOWN, E.STOP_REQUESTED): S.STOPPING,
    (S.STOPPING, E.STOP_COMPLETE): S.STOPPED,
    **{(state, E.FAILURE): S.FAILED for state in S},
}
"""``(state, event) → next state``: the only legal moves."""


class EntryAction(enum.Enum):
    """What the leader does to a partition's fetching on entering a state."""

    START_FETCHING = "hand the partition to a mirror fetcher"
    REMOVE_FETCHER = "take the partition off its mirror fetcher"
    NOTHING = "leave fetching as it is"


ENTRY_ACTIONS: dict[MirrorPartitionState, EntryAction] = {
    S.PREPARING: EntryAction.REMOVE_FETCHER,
    S.MIRRORING: EntryAction.START_FETCHING,
    S.PAUSING: EntryAction.REMOVE_FETCHER,
    S.PAUSED: EntryAction.NOTHING,
    S.STOPPING: EntryAction.NOTHING,
    S.STOPPED: EntryAction.NOTHING,
    S.FAILED: EntryAction.REMOVE_FETCHER,
    S.UNKNOWN: EntryAction.NOTHING,
}
"""Every state's entry action. STOPPING removes the fetcher as the first step of its own
work (the stop sequence must hold the partition while it cuts the log)."""


class InFlightWork(enum.Enum):
    """The work a transient state runs until its completion event."""

    PREPARE = "LME truncation here, then wait for every ISR member's cut"
    REMOVE_FETCHER = "take the partition off its mirror fetcher"
    STOP = "remove the fetcher, cut at the LSO, persist the LME, bump the epoch, PID reset"


IN_FLIGHT: dict[MirrorPartitionState, tuple[InFlightWork, MirrorEvent]] = {
    S.PREPARING: (InFlightWork.PREPARE, E.TRUNCATION_COMPLETE),
    S.PAUSING: (InFlightWork.REMOVE_FETCHER, E.FETCHERS_REMOVED),
    S.STOPPING: (InFlightWork.STOP, E.STOP_COMPLETE),
}
"""The transient states: their work and the event that completes it (PREPARE may need
several rounds; the others complete in one). Every other state waits for a request."""

del S, E


class IllegalMirrorTransition(Exception):
    """An event that the current state does not accept."""

    def __init__(self, state: MirrorPartitionState, event: MirrorEvent) -> None:
        super().__init__(f"{event.name} is not valid in state {state.name}")
        self.state = state
        self.event = event


def next_state(state: MirrorPartitionState, event: MirrorEvent) -> MirrorPartitionState:
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise IllegalMirrorTransition(state, event) from None


@dataclass(frozen=True, slots=True)
class MirrorPartitionKey:
    """One mirror partition; the topic id is what survives a delete-and-recreate."""

    mirror: str
    topic_id: uuid.UUID
    topic: str
    partition: int


class MirrorNameIntent(enum.Enum):
    """What the ``mirror.name`` topic config asks of a partition."""

    NONE = "not a mirror topic"
    MIRROR = "mirror"
    PAUSE = "pause"
    REMOVE = "remove (failover)"


@dataclass(frozen=True, slots=True)
class MirrorNameConfig:
    mirror: str | None
    intent: MirrorNameIntent


@functools.lru_cache(maxsize=1024)
def parse_mirror_name(value: str | None) -> MirrorNameConfig:
    """Split ``name``, ``name.paused``, ``name.removed`` or unset into mirror and intent.

    The suffix wins: a mirror literally named ``x.paused`` cannot be told apart from a
    paused ``x``, so such names must be refused when mirrors are created. Cached: every
    reconcile step of every mirror partition asks, and there are few distinct values.
    """
    if not value:
        return MirrorNameConfig(None, MirrorNameIntent.NONE)
    if value.endswith(PAUSED_SUFFIX):
        return MirrorNameConfig(value[: -len(PAUSED_SUFFIX)], MirrorNameIntent.PAUSE)
    if value.endswith(REMOVED_SUFFIX):
        return MirrorNameConfig(value[: -len(REMOVED_SUFFIX)], MirrorNameIntent.REMOVE)
    return MirrorNameConfig(value, MirrorNameIntent.MIRROR)


_EVENT_FOR_INTENT: dict[tuple[MirrorNameIntent, MirrorPartitionState], MirrorEvent] = {
    (MirrorNameIntent.MIRROR, MirrorPartitionState.UNKNOWN): MirrorEvent.TOPIC_ADDED,
    (MirrorNameIntent.MIRROR, MirrorPartitionState.STOPPED): MirrorEvent.TOPIC_ADDED,
    (MirrorNameIntent.MIRROR, MirrorPartitionState.PAUSED): MirrorEvent.RESUME_REQUESTED,
    (MirrorNameIntent.PAUSE, MirrorPartitionState.MIRRORING): MirrorEvent.PAUSE_REQUESTED,
    (MirrorNameIntent.REMOVE, MirrorPartitionState.MIRRORING): MirrorEvent.STOP_REQUESTED,
    (MirrorNameIntent.REMOVE, MirrorPartitionState.PAUSED): MirrorEvent.STOP_REQUESTED,
    (MirrorNameIntent.REMOVE, MirrorPartitionState.FAILED): MirrorEvent.STOP_REQUESTED,
    (MirrorNameIntent.REMOVE, MirrorPartitionState.PREPARING): MirrorEvent.STOP_REQUESTED,
    (MirrorNameIntent.REMOVE, MirrorPartitionState.UNKNOWN): MirrorEvent.STOP_REQUESTED,
    (MirrorNameIntent.NONE, MirrorPartitionState.PREPARING): MirrorEvent.STOP_REQUESTED,
    (MirrorNameIntent.NONE, MirrorPartitionState.MIRRORING): MirrorEvent.STOP_REQUESTED,
    (MirrorNameIntent.NONE, MirrorPartitionState.PAUSED): MirrorEvent.STOP_REQUESTED,
}


def event_for_config(state: MirrorPartitionState, mirror_name: str | None) -> MirrorEvent | None:
    """The event a leader applies for the current ``mirror.name`` value, or None to wait.

    None means either "already where the config wants it" or "an in-flight state must
    finish first" (PAUSING, STOPPING, and PREPARING unless stopped); the leader asks again
    after every transition. A stop pre-empts PREPARING: the leader takes it before the
    state's own work. An unset config on an active partition stops it, so a topic can
    never stay read-only without a mirror.
    """
    intent = parse_mirror_name(mirror_name).intent
    return _EVENT_FOR_INTENT.get((intent, state))
