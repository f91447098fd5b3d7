"""How a partition leader reads ``mirror.name`` once the mirror stopped a topic itself."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.broker.config import MIRROR_NAME, MIRROR_STOP_REASON
from mirrorsim.coordinator.source_deletions import effective_mirror_name
from mirrorsim.coordinator.state_machine import (
    MirrorEvent,
    MirrorPartitionState,
    event_for_config,
)

S = MirrorPartitionState
mirror_names = st.sampled_from(["m", "m.paused", "m.removed", None])


@given(mirror_names)
def test_without_a_stop_reason_the_config_is_read_as_is(value: str | None) -> None:
    configs = {} if value is None else {MIRROR_NAME: value}
    assert effective_mirror_name(configs) == value


@given(st.sampled_from(["m", "m.paused", "m.removed"]))
def test_a_stopped_topic_reads_as_removed_from_its_mirror(value: str) -> None:
    configs = {MIRROR_NAME: value, MIRROR_STOP_REASON: "SOURCE_TOPIC_DELETED"}
    assert effective_mirror_name(configs) == "m.removed"


def test_a_stop_reason_on_a_topic_outside_any_mirror_changes_nothing() -> None:
    assert effective_mirror_name({MIRROR_STOP_REASON: "SOURCE_TOPIC_DELETED"}) is None


@given(st.sampled_from(list(S)))
def test_a_stopped_topic_goes_to_stopped_and_stays_there(state: MirrorPartitionState) -> None:
    name = effective_mirror_name({MIRROR_NAME: "m", MIRROR_STOP_REASON: "TOPIC_ID_MISMATCH"})
    event = event_for_config(state, name)
    if state in (S.UNKNOWN, S.PREPARING, S.MIRRORING, S.PAUSED, S.FAILED):
        assert event is MirrorEvent.STOP_REQUESTED  # a stop pre-empts PREPARING too
    else:
        assert event is None  # in particular STOPPED is not restarted (TOPIC_ADDED)
