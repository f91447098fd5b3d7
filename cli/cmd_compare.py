"""``mirrorsim compare``: the same workload copied by cluster mirroring, an MM2-style
replicator and legacy MirrorMaker between in-process clusters, then a failover each."""

from __future__ import annotations

import asyncio
import shlex
import sys
import tempfile
from pathlib import Path

import click

from mirrorsim.compare.mm2 import OFFSET_TRANSLATIONS, OffsetTranslation
from mirrorsim.compare.report import render_markdown, report_document, write_report
from mirrorsim.compare.scenario import ComparisonSettings, run_comparison
from mirrorsim.compare.workload import Workload

MIN_RECORDS = Workload().log_start_offset + 2
"""The trimmed head, then at least one record the group has read and one it has not."""


@click.command()
@click.option(
    "--records",
    default=1000,
    show_default=True,
    type=click.IntRange(min=MIN_RECORDS),
    help=f"Records per partition (the first {MIN_RECORDS - 2} are deleted as by retention).",
)
@click.option("--partitions", default=2, show_default=True, type=click.IntRange(min=1))
@click.option("--offset-lag-max", default=100, show_default=True, help="MM2's offset.lag.max.")
@click.option(
    "--translation",
    default="offset-sync",
    show_default=True,
    type=click.Choice(OFFSET_TRANSLATIONS),
    help="How the MM2 run commits group offsets on the target: through offset syncs "
    "(MirrorCheckpointConnector) or by record timestamps (MirrorGroupOffsetConnector); "
    "timestamp reports both re-read counts.",
)
@click.option(
    "--report",
    "report_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory for comparison.json/.md/.png.",
)
def compare(
    records: int,
    partitions: int,
    offset_lag_max: int,
    translation: OffsetTranslation,
    report_dir: Path | None,
) -> None:
    """Compare cluster mirroring with MM2-style and legacy MirrorMaker copies."""
    workload = Workload(
        partitions=partitions,
        records_per_partition=records,
        consumed_per_partition=min(max(1, (records * 2) // 5 + 37), records - MIN_RECORDS + 1),
    )
    settings = ComparisonSettings(
        workload=workload, offset_lag_max=offset_lag_max, offset_translation=translation
    )
    with tempfile.TemporaryDirectory(prefix="mirrorsim-compare-") as data_dir:
        outcomes = asyncio.run(run_comparison(settings, Path(data_dir)))
    command = shlex.join(["mirrorsim", "compare", *sys.argv[2:]])
    document = report_document(settings, outcomes, command)
    click.echo(render_markdown(document), nl=False)
    if report_dir is not None:
        for path in write_report(document, report_dir):
            click.echo(f"wrote {path}")
