"""`mirrorsim drill list | run NAME|FILE [--report DIR]`: failover/failback drills."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from mirrorsim.cli.errors import abort
from mirrorsim.cli.output import wide_console
from mirrorsim.drills import DrillResult, ScenarioError, builtin_scenarios, resolve, run_drill
from mirrorsim.drills.report import ReportDirError, claim_report_dir


@click.group()
def drill() -> None:
    """Failover and failback drills with measured RPO, RTO and duplicates."""


@drill.command("list")
def list_drills() -> None:
    """The built-in drills, one line each."""
    for scenario in builtin_scenarios():
        first_sentence = scenario.description.split(". ")[0].rstrip(".")
        click.echo(f"{scenario.name:<28} {first_sentence}")


@drill.command("run")
@click.argument("name_or_file")
@click.option(
    "--report",
    "report_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write report.md, report.json and timeline.png here (a new or empty folder, or "
    "an earlier report's).",
)
def run(name_or_file: str, report_dir: Path | None) -> None:
    """Run a built-in drill (by name) or a scenario file; exit 0 only if every check holds."""
    try:
        scenario = resolve(name_or_file)
    except ScenarioError as exc:
        abort(str(exc))
    if report_dir is not None:
        claim_or_abort(report_dir)
    console = Console(stderr=True)
    quiet_client_logs()
    result = asyncio.run(run_drill(scenario, report_dir, console=console))
    print_result(result)
    raise SystemExit(0 if result.passed else 1)


def claim_or_abort(report_dir: Path) -> None:
    """Refuse, before the drill runs, a report folder holding what a report did not write."""
    try:
        claim_report_dir(report_dir)
    except ReportDirError as exc:
        abort(str(exc))


def quiet_client_logs() -> None:
    """The workloads' clients log every refused connection while a cluster is down;
    the drill's own event lines already say so."""
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)


def print_result(result: DrillResult) -> None:
    table = Table(title=f"drill {result.scenario.name}")
    table.add_column("check", overflow="fold")
    table.add_column("result", overflow="fold")
    for outcome in result.outcomes:
        detail = "pass" if outcome.passed else f"FAIL (found {outcome.left!r})"
        table.add_row(outcome.text, detail)
    out = wide_console()
    out.print(table)
    if result.error:
        out.print(f"[red]error:[/] {result.error.splitlines()[0]}")
    if result.report_dir is not None:
        out.print(f"report: {result.report_dir / 'report.md'}")
    out.print(f"drill {result.scenario.name}: {'PASSED' if result.passed else 'FAILED'}")
