"""`mirrorsim chaos`: explore randomized mirror lifecycles against two real clusters."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from mirrorsim.drills.chaos.explorer import Exploration, Explorer, ScheduleOutcome, explore
from mirrorsim.drills.chaos.report import summary, write_report
from mirrorsim.drills.chaos.schedule import generate


@click.command()
@click.option("--schedules", default=20, show_default=True, type=click.IntRange(min=1))
@click.option("--steps", default=8, show_default=True, type=click.IntRange(min=1, max=100))
@click.option("--seed", default=1, show_default=True, type=int)
@click.option(
    "--processes", is_flag=True, help="Brokers as OS processes: SIGKILL and SIGSTOP/SIGCONT."
)
@click.option(
    "--replication-factor",
    default=1,
    show_default=True,
    type=click.IntRange(min=1, max=2),
    help="2: every topic, mirror topic and __mirror_state partition on both brokers.",
)
@click.option("--no-shrink", is_flag=True, help="Report violations without shrinking them.")
@click.option(
    "--report",
    "report_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write report.md, report.json and one replayable drill YAML per violation here.",
)
def chaos(
    schedules: int,
    steps: int,
    seed: int,
    processes: bool,
    replication_factor: int,
    no_shrink: bool,
    report_dir: Path | None,
) -> None:
    """Run seeded random schedules of operator commands, faults and load; check the
    invariants after each; shrink a violating schedule to a replayable drill. Exit 0
    only when no invariant was violated."""
    for name in ("aiokafka", "mirrorsim"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    result = asyncio.run(_run(schedules, steps, seed, not no_shrink, processes, replication_factor))
    out = Console()
    for key, value in summary(result).items():
        out.print(f"{key.replace('_', ' ')}: {value}")
    for finding in result.findings:
        shrunk = finding.shrunk
        length = f", shrunk to {len(shrunk.steps)} steps" if shrunk else ""
        out.print(
            f"[red]violation[/] schedule {finding.outcome.schedule.index}: "
            f"{', '.join(finding.outcome.invariants)}{length}"
        )
    if report_dir is not None:
        files = write_report(result, report_dir)
        out.print(f"report: {files['report.md']}")
    raise SystemExit(0 if not result.violations else 1)


async def _run(
    schedules: int, steps: int, seed: int, shrink: bool, processes: bool, replication_factor: int
) -> Exploration:
    plan = [generate(seed, index, steps, processes=processes) for index in range(schedules)]
    columns = (
        TextColumn("[bold]chaos"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[violations]} violating"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("chaos", total=schedules, violations=0)
        violating = 0

        def done(outcome: ScheduleOutcome) -> None:
            nonlocal violating
            violating += bool(outcome.violations)
            progress.update(task, advance=1, violations=violating)

        async with Explorer(processes=processes, replication_factor=replication_factor) as explorer:
            return await explore(explorer, plan, shrink=shrink, on_done=done)
