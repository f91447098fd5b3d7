"""Which removes promise that the destination equals the source below their
MIRROR_PID_RESET: only those that stopped a copy."""

from __future__ import annotations

import pytest

from mirrorsim.drills.chaos.invariants import stopped_a_copy
from mirrorsim.drills.chaos.journal import RemoveRecord
from mirrorsim.drills.chaos.observe import UNANSWERED


@pytest.mark.parametrize(
    ("state_before", "promised"),
    [
        ("PREPARING", True),
        ("MIRRORING", True),
        ("PAUSED", True),
        ("OFFLINE", True),
        (UNANSWERED, True),
        ("STOPPED", False),
        (None, False),
    ],
)
def test_only_a_remove_that_stopped_a_copy_promises_convergence(
    state_before: str | None, promised: bool
) -> None:
    """Seed 3, schedule 32 of the soak: a re-add on ``b``, then ``b`` down, then a remove
    that reached the partition still STOPPED. The destination kept its own log with the
    first failover's MIRROR_PID_RESET, and the check compared it with the source's."""
    removal = RemoveRecord(1, "b", "t", 5, pid_reset_offset=6, state_before=state_before)
    assert stopped_a_copy(removal) is promised
