"""Consumer-group check: a destination commit must point at the source's record."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.spark_logs import make_batches, write_partition
from pyspark.sql import DataFrame, SparkSession

from mirrorsim.verify.convergence import compare_committed_offsets
from mirrorsim.verify.inputs import committed_offsets_frame, stop_offsets_frame
from mirrorsim.verify.job import read_segments
from mirrorsim.verify.segments import TopicPartition

pytestmark = pytest.mark.spark

ORDERS_0 = TopicPartition("orders", 0)


def logs(spark: SparkSession, tmp_path: Path, level: str) -> tuple[DataFrame, DataFrame]:
    source = make_batches(8, leader_epoch=1)
    destination = source[:4] + make_batches(4, start_offset=20, leader_epoch=2, salt="new")
    write_partition(tmp_path / "src", "orders", 0, source)
    write_partition(tmp_path / "dst", "orders", 0, destination)
    return (
        read_segments(spark, str(tmp_path / "src"), level=level),
        read_segments(spark, str(tmp_path / "dst"), level=level),
    )


@pytest.mark.parametrize("level", ["batch", "record"])
def test_committed_offsets(spark: SparkSession, tmp_path: Path, level: str) -> None:
    source_log, destination_log = logs(spark, tmp_path, level)
    source_commits = {
        "same": {ORDERS_0: 12},
        "behind": {ORDERS_0: 12},
        "diverged-record": {ORDERS_0: 22},
        "at-log-end": {ORDERS_0: 40},
        "unsynced": {ORDERS_0: 5},
    }
    destination_commits = {
        "same": {ORDERS_0: 12},
        "behind": {ORDERS_0: 10},
        "diverged-record": {ORDERS_0: 22},
        "at-log-end": {ORDERS_0: 40},
    }

    checks = compare_committed_offsets(
        committed_offsets_frame(spark, source_commits),
        committed_offsets_frame(spark, destination_commits),
        source_log,
        destination_log,
    ).collect()

    kinds = {row["group"]: (row["kind"], row["classification"]) for row in checks}
    assert kinds == {
        "same": ("match", None),
        "behind": ("commit_offset_mismatch", "unexpected"),
        "diverged-record": ("commit_record_mismatch", "unexpected"),
        "at-log-end": ("match", None),
        "unsynced": ("missing_commit", "unexpected"),
    }


def test_commits_beyond_the_stop_offset_are_expected(spark: SparkSession, tmp_path: Path) -> None:
    source_log, destination_log = logs(spark, tmp_path, "batch")

    [check] = compare_committed_offsets(
        committed_offsets_frame(spark, {"g": {ORDERS_0: 22}}),
        committed_offsets_frame(spark, {"g": {ORDERS_0: 25}}),
        source_log,
        destination_log,
        stop_offsets_frame(spark, {ORDERS_0: 20}),
    ).collect()

    assert (check["kind"], check["classification"]) == ("commit_offset_mismatch", "expected")
    assert (check["expected"], check["found"]) == (
        "offset 22 -> batch at 20",
        "offset 25 -> batch at 25",
    )
