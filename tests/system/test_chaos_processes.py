"""The chaos explorer with brokers as OS processes: SIGKILL outages and restarts, and
SIGSTOP/SIGCONT pauses, in schedules that run and report like the in-process ones."""

from __future__ import annotations

import pytest

from mirrorsim.drills.chaos.explorer import Explorer, explore
from mirrorsim.drills.chaos.journal import INVARIANTS
from mirrorsim.drills.chaos.schedule import FAULTS, generate
from mirrorsim.drills.scenario import Step

pytestmark = [pytest.mark.system, pytest.mark.slow]


async def test_schedules_with_real_kills_and_pauses_run_and_are_checked() -> None:
    freeze = Step("chaos_freeze", {"cluster": "a", "broker": 1, "seconds": 1.0})
    outage = Step("chaos_outage", {"cluster": "a"})
    plan = [generate(21, i, 5, processes=True) for i in range(2)]
    plan[0] = plan[0].with_steps((plan[0].steps[0], freeze, outage, *plan[0].steps[1:]))
    async with Explorer(processes=True) as explorer:
        result = await explore(explorer, plan, shrink=False)
        assert all(c.running for c in explorer.clusters.values())
    assert [o.error for o in result.outcomes] == [None, None]
    assert result.faults >= 2
    assert sum(1 for s in plan[0].steps if s.kind in FAULTS) >= 2
    for outcome in result.outcomes:
        assert set(outcome.invariants) <= set(INVARIANTS)
