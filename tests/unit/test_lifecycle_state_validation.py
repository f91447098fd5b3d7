"""Which partition states PauseMirrorTopics and RemoveTopicsFromMirror accept, derived from
the state machine's table (the spec's "Valid from" column)."""

from __future__ import annotations

import pytest

from mirrorsim.coordinator.lifecycle import settles_into
from mirrorsim.coordinator.state_machine import MirrorPartitionState as S

MIRROR = "my-mirror"
PAUSED_NAME = MIRROR + ".paused"
REMOVED_NAME = MIRROR + ".removed"


@pytest.mark.parametrize(
    ("state", "accepted"),
    [
        (S.MIRRORING, True),
        (S.PREPARING, True),
        (S.UNKNOWN, True),
        (S.FAILED, False),
        (S.STOPPING, False),
        (S.STOPPED, False),
    ],
)
def test_pause_is_valid_from_mirroring_and_what_becomes_mirroring(state: S, accepted: bool) -> None:
    assert settles_into(state, PAUSED_NAME, S.PAUSED) is accepted


@pytest.mark.parametrize(
    "state", [S.MIRRORING, S.PAUSED, S.PAUSING, S.PREPARING, S.FAILED, S.STOPPED, S.UNKNOWN]
)
def test_removal_is_valid_from_every_state_that_reaches_stopped(state: S) -> None:
    assert settles_into(state, REMOVED_NAME, S.STOPPED)
