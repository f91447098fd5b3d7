"""The chaos explorer against two real in-process clusters: a short seeded exploration,
the check catching what is taken behind its back, a violation replayed as a drill, and
the command line's refusals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from mirrorsim.cli.main import cli
from mirrorsim.client.admin_types import AclBindingFilter, ResourceType, TopicPartition
from mirrorsim.drills import load_scenario, run_drill
from mirrorsim.drills.chaos.explorer import CLUSTER_CONFIGS, Explorer, explore
from mirrorsim.drills.chaos.journal import ACLS, INVARIANTS, LOST
from mirrorsim.drills.chaos.observe import mirror_state
from mirrorsim.drills.chaos.report import write_report
from mirrorsim.drills.chaos.schedule import Schedule, generate, scenario_document
from mirrorsim.drills.chaos.steps import _admin
from mirrorsim.drills.context import DrillContext
from mirrorsim.drills.scenario import Step
from mirrorsim.drills.steps import run_step


def _steps(*lines: tuple[str, dict]) -> Schedule:
    return Schedule(0, 0, "t", tuple(Step(kind, params) for kind, params in lines))


async def _explore_and_report(schedules: int, steps: int, seed: int, report: Path) -> None:
    plan = [generate(seed, i, steps) for i in range(schedules)]
    async with Explorer() as explorer:
        result = await explore(explorer, plan, shrink=False)
    assert [o.error for o in result.outcomes] == [None] * schedules
    assert result.steps == sum(len(s.steps) for s in plan)
    for outcome in result.outcomes:
        assert set(outcome.invariants) <= set(INVARIANTS)
    files = write_report(result, report)
    assert {"report.md", "report.json"} <= set(files)
    assert len(result.findings) == result.violations
    for finding in result.findings:
        replay = load_scenario(report / f"violation-{result.findings.index(finding) + 1}.yaml")
        assert replay.steps[-1].kind == "chaos_check"


async def test_a_short_seeded_exploration_runs_every_schedule_and_reports(
    tmp_path: Path,
) -> None:
    await _explore_and_report(2, 4, 5, tmp_path / "report")


@pytest.mark.slow
@pytest.mark.xfail(
    strict=False,
    reason="open: on the current code a few schedules end in an error instead of a verdict "
    "(see docs/chaos.md, Findings on the fixed code)",
)
async def test_a_longer_exploration_runs_every_schedule_and_reports(tmp_path: Path) -> None:
    await _explore_and_report(25, 8, 11, tmp_path / "report")


async def test_the_check_catches_a_lost_record_and_a_deleted_acl() -> None:
    """Records deleted and an ACL revoked behind the explorer's back are violations."""
    async with Explorer() as explorer:
        ctx = DrillContext(work_dir=explorer.root, clusters=explorer.clusters)
        topic, mirror = "behind-back", "behind-back-mirror"
        named = {"cluster": "b", "mirror": mirror, "topic": topic}
        for kind, params in [
            ("chaos_setup", {"source": "a", "destination": "b", "topic": topic, "mirror": mirror}),
            ("chaos_produce", {"cluster": "a", "topic": topic, "records": 3}),
            ("chaos_remove", named),
            ("chaos_grant_acl", {"cluster": "b", "topic": topic, "principal": "User:moved"}),
        ]:
            await run_step(ctx, Step(kind, params))
        async with _admin(explorer.clusters["a"]) as admin:
            await admin.delete_records({TopicPartition(topic, 0): 8})
        async with _admin(explorer.clusters["b"]) as admin:
            await admin.delete_acls([AclBindingFilter(ResourceType.TOPIC, topic)])
        await run_step(ctx, Step("chaos_check", {}))
        assert {LOST, ACLS} <= set(ctx.results["chaos_violations"])
        details = "\n".join(ctx.results["chaos_details"])
        assert f"a/{topic}: 3 record(s) acknowledged at 5" in details
        assert f"b: ACL User:moved on {topic} deleted" in details


async def test_a_failback_without_the_sources_state_coordinator_still_stops_on_remove(
    wait_for: Any,
) -> None:
    """``chaos_state_leader_down`` stops the broker of ``b`` that coordinates the topic's
    mirror state while ``b`` keeps answering: ``a``'s failback from ``b`` then waits in
    PREPARING for the LME, and a remove there still reaches STOPPED with every invariant
    holding."""
    async with Explorer() as explorer:
        ctx = DrillContext(work_dir=explorer.root, clusters=explorer.clusters)
        topic, mirror = "no-state-leader", "no-state-leader-mirror"
        on_a = {"cluster": "a", "mirror": mirror, "topic": topic}
        on_b = {"cluster": "b", "mirror": mirror, "topic": topic}
        for kind, params in [
            ("chaos_setup", {"source": "a", "destination": "b", "topic": topic, "mirror": mirror}),
            ("chaos_remove", on_b),
        ]:
            await run_step(ctx, Step(kind, params))
        b = explorer.clusters["b"]

        async def state_leader_down() -> bool:
            """The step skips when ``b``'s metadata does not answer in time (a loaded
            machine); the test needs the fault, so it asks again."""
            await run_step(ctx, Step("chaos_state_leader_down", on_b))
            return len(b.in_process_brokers) == 1

        await wait_for(state_leader_down, timeout=30, message="b's state coordinator down")
        await run_step(ctx, Step("chaos_failback", {**on_a, "source": "b"}))
        assert b.running and len(b.in_process_brokers) == 1
        # the failback's partition starts UNKNOWN and its leader moves it to PREPARING
        await wait_for(
            lambda: _is_preparing(explorer, topic), timeout=30, message="a's failback PREPARING"
        )
        for kind, params in [("chaos_remove", on_a), ("chaos_check", {})]:
            await run_step(ctx, Step(kind, params))
        assert ctx.results["chaos_violations"] == [], ctx.results["chaos_details"]
        assert ctx.chaos is not None and ctx.chaos.faults == 1
        assert await mirror_state(explorer.clusters["a"], topic) == "STOPPED"


async def _is_preparing(explorer: Explorer, topic: str) -> bool:
    return await mirror_state(explorer.clusters["a"], topic) == "PREPARING"


async def test_a_schedule_replays_as_a_drill_with_its_invariants(tmp_path: Path) -> None:
    schedule = _steps(
        ("chaos_setup", {"source": "a", "destination": "b", "topic": "r", "mirror": "rm"}),
        ("chaos_produce", {"cluster": "a", "topic": "r", "records": 4}),
        ("chaos_pause", {"cluster": "b", "mirror": "rm", "topic": "r"}),
        ("chaos_resume", {"cluster": "b", "mirror": "rm", "topic": "r"}),
    )
    path = tmp_path / "replay.yaml"
    path.write_text(yaml.safe_dump(scenario_document(schedule, CLUSTER_CONFIGS, "replay")))
    result = await run_drill(load_scenario(path), tmp_path / "report")
    assert result.error is None
    assert result.results["chaos_violations"] == []
    assert result.passed
    assert "chaos_violations" in (tmp_path / "report" / "report.md").read_text()


def test_the_command_refuses_what_it_cannot_do(tmp_path: Path) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("mine")
    result = CliRunner().invoke(cli, ["chaos", "--report", str(a_file)])
    assert result.exit_code == 1
    assert "is a file" in result.output
    assert a_file.read_text() == "mine"
    result = CliRunner().invoke(cli, ["chaos", "--schedules", "0"])
    assert result.exit_code == 1
