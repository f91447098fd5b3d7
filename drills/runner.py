"""Run one scenario end to end: clusters up, steps in order with progress, workloads
and clusters always stopped, results finalized, assertions evaluated, report written.

A step that raises ends the run: the remaining steps are skipped, the error is in the
report, and the drill fails, but the report still holds everything measured so far.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from mirrorsim.drills.assertions import AssertionOutcome, evaluate, parse_assertion
from mirrorsim.drills.clusters import DrillCluster
from mirrorsim.drills.context import DrillContext, Event
from mirrorsim.drills.report import write_report
from mirrorsim.drills.sampler import TimelineSampler
from mirrorsim.drills.scenario import Scenario
from mirrorsim.drills.steps import run_step
from mirrorsim.drills.workloads import CLIENT_STOP_TIMEOUT_S


@dataclass
class DrillResult:
    scenario: Scenario
    outcomes: list[AssertionOutcome]
    results: dict[str, Any]
    error: str | None = None
    report_dir: Path | None = None
    files: dict[str, Path] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.error is None and all(o.passed for o in self.outcomes)


async def run_drill(
    scenario: Scenario,
    report_dir: Path | None = None,
    *,
    work_dir: Path | None = None,
    console: Console | None = None,
) -> DrillResult:
    """Run ``scenario``; cluster data lives under ``work_dir`` (a fresh temporary
    directory, removed afterwards, when None)."""
    console = console or Console(stderr=True, quiet=True)
    own_work_dir = work_dir is None
    root = work_dir or Path(tempfile.mkdtemp(prefix=f"mirrorsim-drill-{scenario.name}-"))
    ctx = DrillContext(work_dir=root)
    ctx.on_event = lambda event: _show(console, event)
    for definition in scenario.clusters:
        ctx.clusters[definition.name] = DrillCluster.create(definition, root)
    sampler = TimelineSampler(ctx)
    ctx.sampler = sampler
    error = None
    try:
        error = await _run_steps(ctx, scenario, sampler, console)
    finally:
        await _shut_down(ctx, sampler)
        if own_work_dir:
            shutil.rmtree(root, ignore_errors=True)
    _finalize(ctx)
    outcomes = [evaluate(parse_assertion(a), ctx.results) for a in scenario.assertions]
    result = DrillResult(scenario, outcomes, ctx.results, error, report_dir)
    if report_dir is not None:
        result.files = write_report(result, ctx.events, sampler.samples, report_dir)
    return result


async def _run_steps(
    ctx: DrillContext, scenario: Scenario, sampler: TimelineSampler, console: Console
) -> str | None:
    columns = (
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} steps"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(scenario.name, total=len(scenario.steps))
        for index, step in enumerate(scenario.steps, start=1):
            progress.update(task, description=f"{scenario.name}: {step.title}"[:100])
            try:
                await run_step(ctx, step)
            except Exception as exc:
                ctx.mark("step failed", f"{index} {step.kind}: {exc}")
                return f"step {index} ({step.kind}) failed: {exc}\n{traceback.format_exc()}"
            if index == 1:
                sampler.start()
            progress.advance(task)
    return None


async def _shut_down(ctx: DrillContext, sampler: TimelineSampler) -> None:
    await sampler.stop()
    for producer in ctx.producers.values():
        with contextlib.suppress(Exception):
            await producer.stop()
    for consumer in ctx.consumers.values():
        with contextlib.suppress(Exception):
            await consumer.stop()
    for client in ctx.txn_producers.values():
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.stop(), CLIENT_STOP_TIMEOUT_S)
    for cluster in ctx.clusters.values():
        await cluster.stop()


def _finalize(ctx: DrillContext) -> None:
    """Derive the numbers the steps could not know alone: duplicates per consumer
    group, what each consumer moved by a failover re-processed (with its bound), and the
    RTO when a moved producer (not a probe) wrote first."""
    results = ctx.results
    for name, consumer in ctx.consumers.items():
        results.setdefault("duplicates", {})[name] = consumer.duplicates()
        results.setdefault("consumed", {})[name] = len({s.value for s in consumer.seen})
    results["acked_by_workload"] = {n: p.acked for n, p in ctx.producers.items()}
    results["failed_sends"] = {n: p.failed for n, p in ctx.producers.items()}
    failover = results.get("_failover")
    if failover is not None:
        for name, consumer in ctx.consumers.items():
            reprocessed = consumer.reprocessed()
            if reprocessed is None:
                continue
            bound = consumer.reprocess_bound(results["failover_time"], failover["sync_interval_s"])
            results.setdefault("reprocessed", {})[name] = reprocessed
            results.setdefault("reprocess_bound", {})[name] = bound
            results.setdefault("in_flight", {})[name] = consumer.in_flight()
        firsts = [
            ctx.producers[n].first_ack_after_move
            for n in failover.get("moved", [])
            if ctx.producers[n].first_ack_after_move is not None
        ]
        if "probe_ack" in failover:
            firsts.append(failover["probe_ack"])
        if firsts:
            results["rto_seconds"] = round(min(firsts) - results["failover_time"], 3)


def _show(console: Console, event: Event) -> None:
    console.log(f"[cyan]{event.time:7.2f}s[/] {event.kind}: {event.detail}")
