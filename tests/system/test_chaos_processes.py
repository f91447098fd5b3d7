"""The chaos explorer with brokers as OS processes: SIGKILL outages and restarts, and
SIGSTOP/SIGCONT pauses, in schedules that run and report like the in-process ones."""

from __future__ import annotations

import pytest

from mirrorsim.drills.chaos.explorer import Explorer, explore
from mirrorsim.drills.chaos.journal import INVARIANTS
from mirrorsim.drills.chaos.schedule import FAULTS, Schedule, generate
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


async def test_a_transaction_whose_client_knows_only_a_killed_broker_ends_refused() -> None:
    """A broker frozen past its session is fenced and names only the other broker in
    its metadata; that one is then killed. aiokafka's transactional producer, started
    right after, looks for its coordinator on the killed broker for ever: the step ends
    within the settle bound as refused, instead of hanging the schedule."""
    topic, mirror = "chaos-fenced-txn", "mirror-fenced-txn"
    steps = (
        Step("chaos_setup", {"source": "a", "destination": "b", "topic": topic, "mirror": mirror}),
        Step("chaos_freeze", {"cluster": "a", "broker": 2, "seconds": 2.0}),
        Step("chaos_broker_down", {"cluster": "a", "broker": 1}),
        Step("chaos_transaction", {"cluster": "a", "topic": topic, "commit": True}),
    )
    async with Explorer(processes=True, replication_factor=2) as explorer:
        outcome = await explorer.run(Schedule(0, 0, "fenced-txn", steps))
    assert outcome.error is None
    assert outcome.violations == []
    assert outcome.refused >= 1
