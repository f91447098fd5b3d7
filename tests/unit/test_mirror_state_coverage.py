"""Every mirror partition state is named wherever states are listed.

Adding a state is one row in ``coordinator/state_machine.py``'s tables plus its tests;
this fails until the state also has an entry action, a gauge (or a reason for none) and a
chart colour, and keeps the transient states' work consistent with the transition table.
"""

from __future__ import annotations

import pytest

from mirrorsim.broker.metrics.mirror import PARTITION_STATE_GAUGES, STATES_WITHOUT_GAUGE
from mirrorsim.coordinator.state_machine import (
    ENTRY_ACTIONS,
    IN_FLIGHT,
    TRANSITIONS,
    MirrorEvent,
    MirrorPartitionState,
    event_for_config,
)
from mirrorsim.drills.charts import STATE_COLORS

ALL = set(MirrorPartitionState)


@pytest.mark.parametrize(
    ("table", "name"),
    [(ENTRY_ACTIONS, "entry actions"), (STATE_COLORS, "chart colours")],
)
def test_every_state_is_in_the_table(table: dict[MirrorPartitionState, object], name: str) -> None:
    assert set(table) == ALL, name


def test_every_state_has_a_gauge_or_a_reason_for_none() -> None:
    assert set(PARTITION_STATE_GAUGES) | set(STATES_WITHOUT_GAUGE) == ALL
    assert not set(PARTITION_STATE_GAUGES) & set(STATES_WITHOUT_GAUGE)


def test_each_transient_state_is_left_by_its_completion_event() -> None:
    for state, (_, completion) in IN_FLIGHT.items():
        assert (state, completion) in TRANSITIONS, state.name


def test_pausing_and_stopping_take_no_config_request_and_preparing_takes_a_stop() -> None:
    """Only the transient states run work; while PAUSING or STOPPING no config value
    moves the partition (PREPARING takes a stop, which pre-empts its work)."""
    for state in (MirrorPartitionState.PAUSING, MirrorPartitionState.STOPPING):
        assert state in IN_FLIGHT
        for value in (None, "m", "m.paused", "m.removed"):
            assert event_for_config(state, value) is None
    assert (
        event_for_config(MirrorPartitionState.PREPARING, "m.removed") is MirrorEvent.STOP_REQUESTED
    )
