"""`mirrorsim verify`: prove that a destination log is the source's, batch for batch."""

from __future__ import annotations

import re
from pathlib import Path

import click
from mirrorsim.cli.errors import abort
from mirrorsim.verify.inputs import load_committed_offsets, load_stop_offsets
from mirrorsim.verify.job import LEVELS, read_segments, verify_logs
from mirrorsim.verify.progress import SparkProgress
from mirrorsim.verify.render import failures_table, partitions_table
from mirrorsim.verify.session import LOCAL_MASTER, verification_session
from rich.console import Console

# Wide enough that a piped or captured table keeps every column readable.
PIPED_WIDTH = 200
_existing_dir = click.Path(exists=True, file_okay=False, path_type=Path)
_existing_file = click.Path(exists=True, dir_okay=False, path_type=Path)


@click.command()
@click.option("--source-dir", type=_existing_dir, required=True, help="Source data dir.")
@click.option(
    "--destination-dir", type=_existing_dir, required=True, help="Destination data dir."
)
@click.option("--topic", help="Only topics fully matching this regex.")
@click.option(
    "--stop-offsets",
    type=_existing_file,
    help='JSON {"topic-partition": offset}: where mirroring stopped (e.g. at failover).',
)
@click.option(
    "--source-offsets", type=_existing_file, help='JSON {"group": {"topic-partition": offset}}.'
)
@click.option(
    "--destination-offsets",
    type=_existing_file,
    help="Committed offsets on the destination, same format as --source-offsets.",
)
@click.option("--report", "report_path", type=click.Path(path_type=Path), help="JSON report.")
@click.option("--master", default=LOCAL_MASTER, show_default=True, help="Spark master URL.")
@click.option("--level", type=click.Choice(sorted(LEVELS)), default="batch", show_default=True)
def verify(
    source_dir: Path,
    destination_dir: Path,
    topic: str | None,
    stop_offsets: Path | None,
    source_offsets: Path | None,
    destination_offsets: Path | None,
    report_path: Path | None,
    master: str,
    level: str,
) -> None:
    """Compare two data dirs; exit 0 only when nothing diverges unexpectedly."""
    if topic is not None:
        try:
            re.compile(topic)
        except re.error as error:
            abort(f"--topic is not a valid regex: {error}")
    try:
        stops = load_stop_offsets(stop_offsets) if stop_offsets else None
        source_commits = load_committed_offsets(source_offsets) if source_offsets else None
        destination_commits = (
            load_committed_offsets(destination_offsets) if destination_offsets else None
        )
    except (ValueError, OSError) as error:
        abort(str(error))
    console = Console(stderr=True)
    with console.status("starting Spark") as status:
        spark = verification_session(master)
        with SparkProgress(spark.sparkContext, status) as progress:
            report = verify_logs(
                read_segments(spark, str(source_dir), level=level, topic=topic),
                read_segments(spark, str(destination_dir), level=level, topic=topic),
                level=level,
                stop_offsets=stops,
                source_commits=source_commits,
                destination_commits=destination_commits,
                on_step=progress.step,
            )
    out = Console()
    if not out.is_terminal:
        out.width = PIPED_WIDTH
    out.print(partitions_table(report))
    failures = failures_table(report)
    if failures is not None:
        out.print(failures)
    out.print(
        f"{'converged' if report.converged else 'NOT converged'}: "
        f"{report.unexpected_divergences} unexpected, "
        f"{report.expected_divergences} expected divergence(s)"
    )
    if report_path is not None:
        report_path.write_text(report.to_json() + "\n")
    raise SystemExit(0 if report.converged else 1)


if __name__ == "__main__":
    verify()
