"""`mirrorsim verify`: prove that a destination log is the source's, batch for batch.

Two ways to read the logs: the segment files of a data dir of each side
(``--source-dir``/``--destination-dir``), or the live clusters over the Kafka protocol
(``--source``/``--destination`` bootstrap servers), where ``--groups`` also reads the
groups' committed offsets from both clusters.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path

import click
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from rich.console import Console

from mirrorsim.cli.admin_session import command_config, kafka_errors
from mirrorsim.cli.errors import abort
from mirrorsim.cli.output import wide_console
from mirrorsim.verify.inputs import load_committed_offsets, load_stop_offsets
from mirrorsim.verify.job import LEVELS, read_cluster, read_segments, verify_logs
from mirrorsim.verify.live_offsets import CommittedOffsets, read_committed_offsets
from mirrorsim.verify.progress import SparkProgress
from mirrorsim.verify.render import failures_table, partitions_table
from mirrorsim.verify.replicas import broker_dirs, choose_replicas
from mirrorsim.verify.segments import discover_partitions
from mirrorsim.verify.session import LOCAL_MASTER, verification_session

_existing_dir = click.Path(exists=True, file_okay=False, path_type=Path)
_existing_file = click.Path(exists=True, dir_okay=False, path_type=Path)
# The last "module.Name(Error|Exception): message" line of a Python worker's traceback.
_RAISED_ERROR = re.compile(r"^(?:[\w.]+\.)?(\w+(?:Error|Exception): .+)$", re.MULTILINE)


@click.command()
@click.option("--source-dir", type=_existing_dir, help="Source data dir.")
@click.option("--destination-dir", type=_existing_dir, help="Destination data dir.")
@click.option("--source", "source_bootstrap", help="Source cluster bootstrap servers (live).")
@click.option(
    "--destination", "destination_bootstrap", help="Destination cluster bootstrap servers."
)
@click.option(
    "--source-config", type=_existing_file, help="Client properties for the source cluster."
)
@click.option(
    "--destination-config",
    type=_existing_file,
    help="Client properties for the destination cluster.",
)
@click.option(
    "--groups", help="Live mode: check committed offsets of groups fully matching this regex."
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
@click.option(
    "--spark-logs",
    is_flag=True,
    help="Keep Spark's own start-up and warning lines on stderr (hidden by default).",
)
def verify(
    source_dir: Path | None,
    destination_dir: Path | None,
    source_bootstrap: str | None,
    destination_bootstrap: str | None,
    source_config: Path | None,
    destination_config: Path | None,
    groups: str | None,
    topic: str | None,
    stop_offsets: Path | None,
    source_offsets: Path | None,
    destination_offsets: Path | None,
    report_path: Path | None,
    master: str,
    level: str,
    spark_logs: bool,
) -> None:
    """Compare two data dirs or two live clusters; exit 0 only when nothing diverges
    unexpectedly."""
    live = _mode(source_dir, destination_dir, source_bootstrap, destination_bootstrap)
    if not live and (groups or source_config or destination_config):
        abort("--groups, --source-config and --destination-config need --source/--destination")
    if groups is not None and (source_offsets or destination_offsets):
        abort("--groups reads committed offsets from the clusters; drop the offset files")
    _check_regex("--topic", topic)
    _check_regex("--groups", groups)
    source_properties = command_config(source_config)
    destination_properties = command_config(destination_config)
    try:
        stops = load_stop_offsets(stop_offsets) if stop_offsets else None
        source_commits = load_committed_offsets(source_offsets) if source_offsets else None
        destination_commits = (
            load_committed_offsets(destination_offsets) if destination_offsets else None
        )
    except (ValueError, OSError) as error:
        abort(str(error))
    console = Console(stderr=True)
    for option, directory in (("--source-dir", source_dir), ("--destination-dir", destination_dir)):
        if directory is not None:
            _announce_replicas(option, directory, topic, console)
    with console.status("starting Spark") as status:
        if groups is not None:
            status.update("reading committed offsets")
            with kafka_errors():
                source_commits = _live_commits(source_bootstrap, groups, topic, source_properties)
                destination_commits = _live_commits(
                    destination_bootstrap, groups, topic, destination_properties
                )
        spark = verification_session(master, spark_logs=spark_logs)

        with SparkProgress(spark.sparkContext, status) as progress, _reader_errors(live):
            report = verify_logs(
                _read_side(spark, source_dir, source_bootstrap, source_properties, level, topic),
                _read_side(
                    spark,
                    destination_dir,
                    destination_bootstrap,
                    destination_properties,
                    level,
                    topic,
                ),
                level=level,
                stop_offsets=stops,
                source_commits=source_commits,
                destination_commits=destination_commits,
                on_step=progress.step,
            )
    out = wide_console()
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


def _mode(
    source_dir: Path | None,
    destination_dir: Path | None,
    source_bootstrap: str | None,
    destination_bootstrap: str | None,
) -> bool:
    """True for live clusters, False for data dirs; exactly one pair must be given."""
    dirs = source_dir is not None and destination_dir is not None
    clusters = source_bootstrap is not None and destination_bootstrap is not None
    given = (source_dir, destination_dir, source_bootstrap, destination_bootstrap)
    if dirs == clusters or sum(option is not None for option in given) != 2:
        abort(
            "give either --source and --destination (live clusters) "
            "or --source-dir and --destination-dir (data dirs)"
        )
    return clusters


def _announce_replicas(option: str, directory: Path, topic: str | None, out: Console) -> None:
    """Say which replica each partition of a cluster data dir is read from; refuse a dir
    that holds no partition at all."""
    if not broker_dirs(directory) and discover_partitions(directory, topic):
        return
    chosen = choose_replicas(directory, topic)
    if not chosen:
        matching = " matching --topic" if topic else ""
        abort(
            f"{option} {directory}: no partition folders (<topic>-<partition>){matching}, "
            "neither here nor in broker-<id>/ folders"
        )
    for replica in chosen:
        out.print(
            f"{option}: {replica.topic_partition} from broker-{replica.broker_id} "
            f"(longest of {replica.replicas} replica(s), log end offset {replica.log_end_offset})",
            highlight=False,
        )


@contextlib.contextmanager
def _reader_errors(live: bool) -> Iterator[None]:
    """A cluster that fails a Spark task (unreachable, unauthorized) is a user error: show
    the client's own error line instead of a Python traceback wrapped in a JVM one."""
    try:
        yield
    except PySparkException as error:
        if not live:
            raise
        causes = _RAISED_ERROR.findall(str(error))
        abort(f"reading the clusters failed: {causes[-1] if causes else error}")


def _check_regex(option: str, pattern: str | None) -> None:
    if pattern is None:
        return
    try:
        re.compile(pattern)
    except re.error as error:
        abort(f"{option} is not a valid regex: {error}")


def _live_commits(
    bootstrap: str | None, groups: str, topic: str | None, config: dict[str, str]
) -> CommittedOffsets:
    assert bootstrap is not None
    return read_committed_offsets(bootstrap, groups=groups, topic=topic, config=config)


def _read_side(
    spark: SparkSession,
    directory: Path | None,
    bootstrap: str | None,
    config: dict[str, str],
    level: str,
    topic: str | None,
) -> DataFrame:
    if directory is not None:
        return read_segments(spark, str(directory), level=level, topic=topic)
    assert bootstrap is not None
    return read_cluster(spark, bootstrap, level=level, topic=topic, config=config)


if __name__ == "__main__":
    verify()
