"""The mirror partition state machine: every (state, event) pair and the config mapping."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.coordinator.state_machine import (
    TRANSITIONS,
    IllegalMirrorTransition,
    MirrorEvent,
    MirrorNameIntent,
    MirrorPartitionState,
    event_for_config,
    next_state,
    parse_mirror_name,
)
from mirrorsim.protocol.messages.mirror_state_records import MirrorPartitionStateId

S = MirrorPartitionState
E = MirrorEvent

SPEC_VALID_FROM = {
    S.PREPARING: {S.UNKNOWN, S.MIRRORING, S.STOPPED},
    S.MIRRORING: {S.PREPARING, S.PAUSED},
    S.PAUSING: {S.MIRRORING},
    S.PAUSED: {S.PAUSING},
    S.STOPPING: {S.MIRRORING, S.PAUSED, S.FAILED, S.PREPARING, S.UNKNOWN},
    S.STOPPED: {S.STOPPING},
    S.FAILED: set(S),
    S.UNKNOWN: set(),
}
"""The spec's "Valid from" lists; STOPPING also from FAILED (the spec's FAILED paragraph)
and from PREPARING and UNKNOWN (a remove before the partition is mirroring)."""


@given(st.sampled_from(list(S)), st.sampled_from(list(E)))
def test_every_pair_is_legal_exactly_as_the_table_says(
    state: MirrorPartitionState, event: MirrorEvent
) -> None:
    if (state, event) in TRANSITIONS:
        assert next_state(state, event) is TRANSITIONS[(state, event)]
    else:
        with pytest.raises(IllegalMirrorTransition) as raised:
            next_state(state, event)
        assert (raised.value.state, raised.value.event) == (state, event)


def test_table_matches_the_spec_valid_from_lists() -> None:
    reached: dict[MirrorPartitionState, set[MirrorPartitionState]] = {s: set() for s in S}
    for (source, _), target in TRANSITIONS.items():
        reached[target].add(source)
    assert reached == SPEC_VALID_FROM


def test_state_ids_are_the_wire_ids() -> None:
    assert {s.name: int(s) for s in S} == {s.name: int(s) for s in MirrorPartitionStateId}


@pytest.mark.parametrize(
    ("value", "mirror", "intent"),
    [
        (None, None, MirrorNameIntent.NONE),
        ("", None, MirrorNameIntent.NONE),
        ("my-mirror", "my-mirror", MirrorNameIntent.MIRROR),
        ("my-mirror.paused", "my-mirror", MirrorNameIntent.PAUSE),
        ("my-mirror.removed", "my-mirror", MirrorNameIntent.REMOVE),
        ("a.b", "a.b", MirrorNameIntent.MIRROR),
    ],
)
def test_parse_mirror_name(value: str | None, mirror: str | None, intent: MirrorNameIntent) -> None:
    parsed = parse_mirror_name(value)
    assert (parsed.mirror, parsed.intent) == (mirror, intent)


@given(
    st.sampled_from(list(S)),
    st.sampled_from([None, "m", "m.paused", "m.removed"]),
)
def test_config_events_are_always_legal(state: MirrorPartitionState, value: str | None) -> None:
    event = event_for_config(state, value)
    if event is not None:
        next_state(state, event)


@pytest.mark.parametrize(
    ("path", "value", "final"),
    [
        ([E.TRUNCATION_COMPLETE], "m", S.MIRRORING),
        ([E.TRUNCATION_COMPLETE, E.FETCHERS_REMOVED], "m.paused", S.PAUSED),
        ([E.STOP_COMPLETE], "m.removed", S.STOPPED),
    ],
)
def test_level_triggered_leader_reaches_what_the_config_asks(
    path: list[MirrorEvent], value: str, final: MirrorPartitionState
) -> None:
    """A leader applies config events, plus completion events its actions produce."""
    completions = list(path)
    state = S.UNKNOWN
    state = next_state(state, E.TOPIC_ADDED)
    for _ in range(10):
        event = event_for_config(state, value)
        if event is None:
            if not completions:
                break
            event = completions.pop(0)
        state = next_state(state, event)
    assert state is final


def test_scenarios_from_the_spec() -> None:
    state = S.UNKNOWN
    for event, expected in [
        (E.TOPIC_ADDED, S.PREPARING),
        (E.TRUNCATION_COMPLETE, S.MIRRORING),
        (E.PAUSE_REQUESTED, S.PAUSING),
        (E.FETCHERS_REMOVED, S.PAUSED),
        (E.RESUME_REQUESTED, S.MIRRORING),
        (E.STOP_REQUESTED, S.STOPPING),
        (E.STOP_COMPLETE, S.STOPPED),
        (E.TOPIC_ADDED, S.PREPARING),
        (E.FAILURE, S.FAILED),
        (E.STOP_REQUESTED, S.STOPPING),
    ]:
        state = next_state(state, event)
        assert state is expected


@pytest.mark.parametrize("value", ["m.removed", None])
def test_a_stop_pre_empts_preparing(value: str | None) -> None:
    """A remove while PREPARING goes through STOPPING, not back to MIRRORING first."""
    event = event_for_config(S.PREPARING, value)
    assert event is E.STOP_REQUESTED
    assert next_state(S.PREPARING, event) is S.STOPPING


def test_a_remove_before_the_leader_took_the_add_stops_the_partition() -> None:
    assert event_for_config(S.UNKNOWN, "m.removed") is E.STOP_REQUESTED
    assert event_for_config(S.UNKNOWN, None) is None


@given(st.sampled_from([S.UNKNOWN, S.PREPARING, S.MIRRORING, S.PAUSING, S.PAUSED, S.FAILED]))
def test_a_removed_topic_always_ends_stopped(start: MirrorPartitionState) -> None:
    """From any state, a leader that applies the ``.removed`` config's events (and the
    completions of in-flight states) reaches STOPPED, the only writable state."""
    completion = {S.PAUSING: E.FETCHERS_REMOVED, S.STOPPING: E.STOP_COMPLETE}
    state = start
    for _ in range(5):
        event = event_for_config(state, "m.removed") or completion.get(state)
        if event is None:
            break
        state = next_state(state, event)
    assert state is S.STOPPED
