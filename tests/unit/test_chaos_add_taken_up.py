"""After an add, the explorer writes again only once the partition's leader has taken the
topic up: a leader still reporting the STOPPED state the add started from takes produce."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any, cast

import pytest

from mirrorsim.drills.chaos import steps
from mirrorsim.drills.chaos.steps import _wait_taken_up_by_mirror
from mirrorsim.drills.clusters import DrillCluster


class LateLeader:
    """A leader that applies the add only at its third refresh: DescribeMirrors answers
    STOPPED (the failed-over partition) twice, then PREPARING."""

    def __init__(self) -> None:
        self.answers: Iterator[str] = iter(["STOPPED", "STOPPED", "PREPARING"])
        self.asked = 0

    async def __call__(self, cluster: DrillCluster, topic: str) -> str:
        self.asked += 1
        return next(self.answers)


async def test_an_add_is_waited_for_past_the_stopped_state_it_started_from(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Seed 5, schedule 505 reported "produce acknowledged at 15 in PREPARING": on a loaded
    machine the add of a STOPPED topic answered REQUEST_TIMED_OUT, its retry found the
    topic in the mirror, and the wait took the leader's STOPPED for "in a mirror", so the
    next produce reached a leader that had not seen the add."""
    leader = LateLeader()
    monkeypatch.setattr(steps, "mirror_state", leader)
    await _wait_taken_up_by_mirror(cast(Any, SimpleNamespace(name="b")), "readd")
    assert leader.asked == 3
