"""With replicas the explorer's followers lag, so it sees a write the product acts on
before the ISR has it.

Two such defects were once in the product: a WriteTxnMarkers answered as soon as the
leader had the marker, and a STOPPING sequence that went on to STOPPED as soon as the
leader had the MIRROR_PID_RESET. A leader that stops right after either hands over to
a follower without the write: the transaction stays open for ever (its last stable
offset stops below it), or the partition keeps the source's producers.

Each test runs the same short schedules on the fixed product (every one must pass), then
puts the defect back with ``monkeypatch`` and runs them again (one must show it). A
schedule is: setup, the write, one broker of the written cluster stops (a broker down or
a restart, each broker in turn, since which one leads is the cluster's choice), restore.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from mirrorsim.broker.handlers import txn_write_markers
from mirrorsim.broker.log.results import AppendInfo
from mirrorsim.broker.replica.manager import ReplicaManager
from mirrorsim.drills.chaos.explorer import Explorer, ScheduleOutcome
from mirrorsim.drills.chaos.journal import COMMITTED, FENCED
from mirrorsim.drills.chaos.schedule import Schedule
from mirrorsim.drills.scenario import Step
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.records import RawBatch

pytestmark = [pytest.mark.system, pytest.mark.slow, pytest.mark.timeout(900)]

FAULTS = [(fault, broker) for fault in ("chaos_broker_down", "chaos_restart") for broker in (1, 2)]
ROUNDS = 3
"""Rounds of the four schedules with the defect put back: a write whose leader is not
the broker stopped, or a follower that fetched it just before, shows nothing."""


Write = Callable[[str, str], Step]
"""The write under test, for a topic and mirror."""


def _schedule(tag: str, write: Write, cluster: str, fault: str, broker: int) -> Schedule:
    topic, mirror = f"chaos-{tag}", f"mirror-{tag}"
    steps = (
        Step("chaos_setup", {"source": "a", "destination": "b", "topic": topic, "mirror": mirror}),
        write(topic, mirror),
        Step(fault, {"cluster": cluster, "broker": broker}),
        Step("chaos_produce", {"cluster": cluster, "topic": topic, "records": 3}),
        Step("chaos_restore", {"cluster": cluster}),
    )
    return Schedule(0, 0, tag, steps)


def _commit(topic: str, mirror: str) -> Step:
    return Step("chaos_transaction", {"cluster": "a", "topic": topic, "commit": True})


def _remove(topic: str, mirror: str) -> Step:
    return Step("chaos_remove", {"cluster": "b", "mirror": mirror, "topic": topic})


async def _run_all(
    explorer: Explorer, name: str, write: Write, cluster: str, rounds: int
) -> list[ScheduleOutcome]:
    outcomes = []
    for round_ in range(rounds):
        for fault, broker in FAULTS:
            tag = f"{name}-{round_}-{fault[6:]}-{broker}"
            outcome = await explorer.run(_schedule(tag, write, cluster, fault, broker))
            assert outcome.error is None, outcome.error
            outcomes.append(outcome)
    return outcomes


def _answer_markers_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    async def replicated(*_: object) -> ErrorCode:
        return ErrorCode.NONE

    monkeypatch.setattr(txn_write_markers, "_replicated", replicated)


def _act_on_the_reset_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The MIRROR_PID_RESET (the one control batch appended through this call) goes on
    without waiting; mirror state records still wait for the ISR."""
    waiting = ReplicaManager.append_internal_replicated

    async def append_internal_replicated(
        self: ReplicaManager, topic: str, partition: int, batches: list[RawBatch], timeout: int
    ) -> AppendInfo:
        if all(batch.is_control for batch in batches):
            return self.append_internal(topic, partition, batches)
        return await waiting(self, topic, partition, batches, timeout)

    monkeypatch.setattr(ReplicaManager, "append_internal_replicated", append_internal_replicated)


@pytest.mark.parametrize(
    ("name", "write", "cluster", "put_back", "invariant"),
    [
        ("marker", _commit, "a", _answer_markers_at_once, COMMITTED),
        ("reset", _remove, "b", _act_on_the_reset_at_once, FENCED),
    ],
    ids=["commit-marker", "mirror-pid-reset"],
)
async def test_a_write_acted_on_before_the_isr_has_it_is_found(
    name: str,
    write: Write,
    cluster: str,
    put_back: Callable[[pytest.MonkeyPatch], None],
    invariant: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with Explorer(replication_factor=2) as explorer:
        fixed = await _run_all(explorer, f"{name}-fixed", write, cluster, 1)
        assert [v for o in fixed for v in o.violations] == []
        put_back(monkeypatch)
        broken = await _run_all(explorer, f"{name}-broken", write, cluster, ROUNDS)
    found = [o for o in broken if any(v.invariant == invariant for v in o.violations)]
    print(f"{name}: {invariant} in {len(found)} of {len(broken)} schedules")
    assert found, f"no {invariant} in {len(broken)} schedules"
