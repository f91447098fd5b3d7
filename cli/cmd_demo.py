"""`mirrorsim demo`: the embedded end-to-end run (the built-in ``demo`` drill).

Two in-process clusters, ``primary`` and ``backup``, on free ports with data in a fresh
temporary directory; a mirror, load, a failover with writes on the backup, a failback,
the Spark verification, and the report. Exit 0 only if every check holds.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import click
from rich.console import Console

from mirrorsim.cli.cmd_drill import claim_or_abort, print_result, quiet_client_logs
from mirrorsim.drills import resolve, run_drill

DEFAULT_REPORT_DIR = Path("mirrorsim-report")


@click.command()
@click.option(
    "--report",
    "report_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_REPORT_DIR,
    show_default=True,
    help="Where the report is written: a new or empty folder, or an earlier report's.",
)
def demo(report_dir: Path) -> None:
    """Mirror, fail over, fail back and verify two in-process clusters."""
    claim_or_abort(report_dir)
    quiet_client_logs()
    result = asyncio.run(run_drill(resolve("demo"), report_dir, console=Console(stderr=True)))
    print_result(result)
    raise SystemExit(0 if result.passed else 1)
