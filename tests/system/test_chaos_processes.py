"""The chaos explorer with brokers as OS processes: SIGKILL outages and restarts, and
SIGSTOP/SIGCONT pauses, in schedules that run and report like the in-process ones."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.drills.chaos.explorer import Explorer, explore
from mirrorsim.drills.chaos.journal import INVARIANTS
from mirrorsim.drills.chaos.schedule import FAULTS, STALL_S, Schedule, generate
from mirrorsim.drills.polling import wait_until
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


async def test_a_stalled_follower_leaves_the_isr_while_its_broker_stays_registered() -> None:
    """The stall: SIGSTOP a follower's process for ``STALL_S``, past the explorer's
    ``replica.lag.time.max.ms`` with replicas but within the broker session. Seen from
    outside, the partition's ISR shrinks to its leader while the cluster still lists
    the broker, in at least one of a few tries (a busy machine may hide one)."""
    async with Explorer(processes=True, replication_factor=2) as explorer:
        cluster = explorer.clusters["a"]
        async with Admin(bootstrap=cluster.bootstrap) as admin:
            (await admin.create_topics([NewTopic("stall", 1, 2)])).all()

            async def isr_and_brokers() -> tuple[int, int]:
                described = await admin.describe_topics(["stall"])
                return (
                    len(described["stall"].partitions[0].isr),
                    len((await admin.describe_cluster()).brokers),
                )

            for _ in range(4):
                await wait_until(lambda: _both_in_sync(isr_and_brokers), 20.0, "an ISR of two")
                described = await admin.describe_topics(["stall"])
                partition = described["stall"].partitions[0]
                follower = next(r for r in partition.replicas if r != partition.leader_id)
                seen: list[tuple[int, int]] = []
                stalled = asyncio.create_task(cluster.freeze_broker(follower, STALL_S))
                while not stalled.done():
                    seen.append(await isr_and_brokers())
                await stalled
                if any(isr == 1 for isr, _ in seen) and all(n == 2 for _, n in seen):
                    return
    pytest.fail(f"no stall shrank the ISR with the broker still registered: {seen}")


async def _both_in_sync(read: Any) -> bool:
    return await read() == (2, 2)
