"""The chaos explorer bites: with a fixed defect put back, an exploration finds it and
shrinks it to a short schedule.

Each test puts one defect back with ``monkeypatch`` (the explorer runs both clusters in
this process, so patching the product module changes every broker), explores the
schedules of one seed in order until the first one that violates the invariant the
defect breaks (at most ``MAX_SCHEDULES``), shrinks that schedule with ddmin and runs the
shrunk schedule again to see it still violate. The defects are those the explorer was
built to catch:

1. a remove while a partition is PREPARING, its source unable to answer
   LastMirroredEpochs, waits for PREPARING to finish (and then cuts the log at the LME)
   instead of stopping: found through ``chaos_state_leader_down`` on the cluster a
   failback reads from;
2. a topic is writable as soon as the ``.removed`` suffix lands, before STOPPED;
3. ACL sync compares the destination's whole ACL set with the source's, so it deletes
   grants made on the destination after a failover.

Measured on a shared 2-core machine (``pytest tests/system/test_chaos_bites.py -m slow -s``,
each test prints its numbers; ``bench/results/chaos-bites.md``): defect 1 at the 17th
schedule of seed 6, shrunk from 8 steps to 5 in its 24 runs (268 s in all; with 40 runs it
reaches 3 steps, but every candidate that still fails waits out the 20 s settle bound, and
the test then takes 8 to 18 minutes); defect 2 at the 2nd schedule of seed 1,
shrunk to 1 step in 15 runs (125 s); defect 3 at the 8th schedule of seed 1, shrunk to 2
steps in 19 runs (158 s).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from mirrorsim.broker.replica.partition_state import PartitionState
from mirrorsim.coordinator import state_machine
from mirrorsim.coordinator.state_machine import MirrorNameIntent, MirrorPartitionState
from mirrorsim.coordinator.sync.acl_scope import AclScope
from mirrorsim.drills import load_scenario, run_drill
from mirrorsim.drills.chaos.explorer import (
    CLUSTER_CONFIGS,
    Explorer,
    ScheduleOutcome,
    explore,
)
from mirrorsim.drills.chaos.journal import ACLS, SETTLES, WRITABLE
from mirrorsim.drills.chaos.schedule import Schedule, generate, scenario_document
from mirrorsim.drills.scenario import Step

pytestmark = [pytest.mark.system, pytest.mark.slow, pytest.mark.timeout(2400)]

MAX_SCHEDULES = 200
MAX_SHRUNK_STEPS = 10
CONFIRM_RUNS = 5
"""A shrunk schedule whose violation is a race may need a few runs to show it again (three
were once not enough for `writable-before-stopped` in a full slow run, which passed alone
at once; a schedule that violates again stops at its first run, so more runs cost only
when it does not)."""


def _put_back_remove_waiting_for_preparing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Defect 1: the config-to-event table has no stop for PREPARING (nor UNKNOWN), as
    before the fix. The leader then finishes PREPARING first, asking a source that cannot
    answer, and the check right before the LME cut (which asks the same table) no longer
    sees the remove."""
    table = state_machine._EVENT_FOR_INTENT
    for intent, state in (
        (MirrorNameIntent.REMOVE, MirrorPartitionState.PREPARING),
        (MirrorNameIntent.REMOVE, MirrorPartitionState.UNKNOWN),
        (MirrorNameIntent.NONE, MirrorPartitionState.PREPARING),
    ):
        monkeypatch.delitem(table, (intent, state))


def _put_back_writable_on_the_suffix(monkeypatch: pytest.MonkeyPatch) -> None:
    """Defect 2: a mirror topic accepts produce as soon as its config no longer asks for
    mirroring, whatever state its leader holds the partition in."""

    def accepts_produce(self: PartitionState, mirror_partition_stopped: bool) -> bool:
        return not self.is_read_only

    monkeypatch.setattr(PartitionState, "accepts_produce", accepts_produce)


def _put_back_acl_sync_of_every_binding(monkeypatch: pytest.MonkeyPatch) -> None:
    """Defect 3: ACL sync owns every destination binding its include rules cover, not only
    those of the mirror's MIRRORING topics."""

    def covers(self: AclScope, binding: object) -> bool:
        return True

    monkeypatch.setattr(AclScope, "covers", covers)


@dataclass(frozen=True)
class Bite:
    name: str
    put_back: Callable[[pytest.MonkeyPatch], None]
    invariant: str
    sign: str
    """What the violation's detail says when it is this defect's."""
    seed: int
    steps: int
    shrink_budget: int = 40
    """Re-runs ddmin may spend (a failing candidate of defect 1 waits out the settle bound)."""


BITES = [
    Bite(
        "remove-while-preparing",
        _put_back_remove_waiting_for_preparing,
        SETTLES,
        "still PREPARING",
        seed=6,
        steps=8,
        shrink_budget=24,
    ),
    Bite(
        "writable-before-stopped",
        _put_back_writable_on_the_suffix,
        WRITABLE,
        "acknowledged",
        seed=1,
        steps=8,
    ),
    Bite("acl-sync-after-failover", _put_back_acl_sync_of_every_binding, ACLS, "ACL", 1, 8),
]


def _failback_while_the_state_leader_is_down() -> Schedule:
    """Fail over to ``b``; ``b``'s state coordinator of the topic goes down; ``a`` fails
    back (its partition waits in PREPARING for ``b``'s LME); ``a`` removes it again."""
    topic, mirror = "chaos-bite-1", "mirror-bite-1"
    on_a = {"cluster": "a", "mirror": mirror, "topic": topic}
    on_b = {"cluster": "b", "mirror": mirror, "topic": topic}
    steps = (
        Step("chaos_setup", {"source": "a", "destination": "b", "topic": topic, "mirror": mirror}),
        Step("chaos_remove", on_b),
        Step("chaos_state_leader_down", on_b),
        Step("chaos_failback", {**on_a, "source": "b"}),
        Step("chaos_remove", on_a),
    )
    return Schedule(0, 0, "bite-1", steps)


REMOVE_WHILE_PREPARING = _failback_while_the_state_leader_is_down()


def _bitten(outcome: ScheduleOutcome, bite: Bite) -> bool:
    return any(v.invariant == bite.invariant and bite.sign in v.detail for v in outcome.violations)


async def _first_violation(explorer: Explorer, bite: Bite) -> ScheduleOutcome | None:
    """Explore the seed's schedules in order; the first that shows the defect. A schedule
    that ends in an error (a step raising, not a verdict) is passed over, as an
    exploration reports it apart from violations; the plain explorations check those."""
    for index in range(MAX_SCHEDULES):
        explored = await explore(explorer, [generate(bite.seed, index, bite.steps)], shrink=False)
        outcome = explored.outcomes[0]
        if _bitten(outcome, bite):
            return outcome
    return None


async def _violates_again(explorer: Explorer, schedule: Schedule, bite: Bite) -> bool:
    for attempt in range(CONFIRM_RUNS):
        outcome = await explorer.run(schedule.renamed(f"{schedule.tag}-again{attempt}"))
        if _bitten(outcome, bite):
            return True
    return False


@pytest.mark.parametrize(
    "bite",
    [
        pytest.param(b, marks=pytest.mark.soak) if b.name == "remove-while-preparing" else b
        for b in BITES
    ],
    ids=[b.name for b in BITES],
)
async def test_a_put_back_defect_is_found_and_shrunk(
    bite: Bite, monkeypatch: pytest.MonkeyPatch
) -> None:
    bite.put_back(monkeypatch)
    async with Explorer() as explorer:
        started = time.monotonic()
        found = await _first_violation(explorer, bite)
        assert found is not None, f"no {bite.invariant} within {MAX_SCHEDULES} schedules"
        explored = time.monotonic() - started
        finding = await explorer.shrink(found, bite.shrink_budget, invariant=bite.invariant)
        shrunk = finding.shrunk
        assert shrunk is not None
        print(
            f"bite {bite.name}: seed {bite.seed}, {bite.invariant} at schedule "
            f"{found.schedule.index} ({found.schedule.index + 1} schedules, {explored:.0f} s); "
            f"shrunk from {len(found.schedule.steps) - 1} to {len(shrunk.steps) - 1} steps in "
            f"{finding.shrink_runs} runs ({time.monotonic() - started - explored:.0f} s): "
            + ", ".join(_described(step) for step in shrunk.steps[1:])
        )
        assert len(shrunk.steps) - 1 <= MAX_SHRUNK_STEPS
        assert len(shrunk.steps) < len(found.schedule.steps)
        assert await _violates_again(explorer, shrunk, bite)


def _described(step: Step) -> str:
    where = step.params.get("cluster", "")
    return f"{step.kind} {where}".strip()


async def test_the_shrunk_remove_while_preparing_replays_as_a_drill(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The failback of defect 1 as a drill file: with the defect put back the replay fails
    on the invariant; ``chaos_state_leader_down`` takes down the source's state
    coordinator on fresh clusters too.

    Replayed up to ``CONFIRM_RUNS`` times, as a shrunk schedule is confirmed: the schedule
    needs the failback's add answered within the step's retry bound, and on a loaded
    machine it once was not (the step counts an unanswered add as refused, the remove
    that follows finds nothing to remove, and that replay has nothing to violate)."""
    _put_back_remove_waiting_for_preparing(monkeypatch)
    path = tmp_path / "violation.yaml"
    path.write_text(yaml.safe_dump(scenario_document(REMOVE_WHILE_PREPARING, CLUSTER_CONFIGS, "")))
    for attempt in range(CONFIRM_RUNS):
        result = await run_drill(load_scenario(path), tmp_path / f"report-{attempt}")
        assert result.error is None
        if not result.passed:
            break
    assert not result.passed
    assert SETTLES in result.results["chaos_violations"]
    assert any("still PREPARING" in d for d in result.results["chaos_details"])
