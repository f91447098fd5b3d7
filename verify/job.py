"""The convergence job: read both logs, compare them, collect a report.

The comparison is lazy DataFrames up to here; this is where Spark runs. Each step is
announced through ``on_step`` so a caller can show progress.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from pyspark.sql import DataFrame, SparkSession

from mirrorsim.verify.convergence import (
    compare_committed_offsets,
    compare_logs,
    divergences,
    join_logs,
    partition_summary,
)
from mirrorsim.verify.inputs import committed_offsets_frame, stop_offsets_frame
from mirrorsim.verify.kafka_source import CLIENT_PREFIX
from mirrorsim.verify.kafka_source import FORMAT as KAFKA_FORMAT
from mirrorsim.verify.report import VerifyReport
from mirrorsim.verify.segment_source import FORMAT
from mirrorsim.verify.segments import TopicPartition
from mirrorsim.verify.views import BATCHES, RECORD_DIGESTS

LEVELS = {"batch": BATCHES, "record": RECORD_DIGESTS}
DEFAULT_MAX_LISTED = 1000


def read_segments(
    spark: SparkSession, data_dir: str, *, level: str = "batch", topic: str | None = None
) -> DataFrame:
    """The batch or record view of every partition under ``data_dir``."""
    reader = spark.read.format(FORMAT).option("view", LEVELS[level])
    if topic is not None:
        reader = reader.option("topic", topic)
    return reader.load(data_dir)


def read_cluster(
    spark: SparkSession,
    bootstrap: str,
    *,
    level: str = "batch",
    topic: str | None = None,
    config: Mapping[str, str] = MappingProxyType({}),
) -> DataFrame:
    """The batch or record view of every partition of a live cluster, read over Kafka's
    protocol; ``config`` holds client properties (security, timeouts)."""
    reader = (
        spark.read.format(KAFKA_FORMAT).option("bootstrap", bootstrap).option("view", LEVELS[level])
    )
    if topic is not None:
        reader = reader.option("topic", topic)
    for name, value in config.items():
        reader = reader.option(CLIENT_PREFIX + name, value)
    return reader.load()


def verify_logs(
    source: DataFrame,
    destination: DataFrame,
    *,
    level: str,
    stop_offsets: dict[TopicPartition, int] | None = None,
    source_commits: dict[str, dict[TopicPartition, int]] | None = None,
    destination_commits: dict[str, dict[TopicPartition, int]] | None = None,
    max_listed: int = DEFAULT_MAX_LISTED,
    on_step: Callable[[str], None] = lambda step: None,
) -> VerifyReport:
    """Compare two log views (batch or record, from any data source) into a report."""
    spark = source.sparkSession
    stops = stop_offsets_frame(spark, stop_offsets or {})
    on_step("comparing logs")
    joined = join_logs(source, destination).cache()
    try:
        comparison = compare_logs(joined, stops)
        partitions = [row.asDict() for row in partition_summary(comparison).collect()]
        on_step("listing divergences")
        listed = divergences(comparison).drop(
            "src_log_start_offset",
            "src_log_end_offset",
            "dst_log_start_offset",
            "dst_log_end_offset",
        )
        found = [row.asDict() for row in listed.limit(max_listed).collect()]
    finally:
        joined.unpersist()
    groups = []
    if source_commits or destination_commits:
        on_step("checking committed offsets")
        checks = compare_committed_offsets(
            committed_offsets_frame(spark, source_commits or {}),
            committed_offsets_frame(spark, destination_commits or {}),
            source,
            destination,
            stops,
        )
        groups = [row.asDict() for row in checks.collect()]
    return VerifyReport(level=level, partitions=partitions, divergences=found, groups=groups)
