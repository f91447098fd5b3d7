"""The mirrorsim-segments reader: partitioning, options and exact filter pushdown."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from helpers.spark_logs import make_batches, write_partition
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from pyspark.sql.datasource import (
    EqualTo,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
    StringStartsWith,
)

from mirrorsim.verify.segment_source import FORMAT, SegmentReader

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("segments")
    write_partition(root, "orders", 0, make_batches(10), per_segment=3)
    write_partition(root, "orders", 1, make_batches(4), per_segment=3)
    write_partition(root, "audit-log", 0, make_batches(2), per_segment=3)
    (root / "orders-2.0123abcd-delete").mkdir()
    return root


def read_all(reader: SegmentReader) -> list[tuple]:
    """Every row the reader yields, whether as tuples or inside Arrow batches."""
    rows = []
    for partition in reader.partitions():
        for item in reader.read(partition):
            if isinstance(item, pa.RecordBatch):
                rows.extend(tuple(row.values()) for row in item.to_pylist())
            else:
                rows.append(item)
    return rows


def test_one_input_partition_per_segment(data_dir: Path) -> None:
    reader = SegmentReader({"path": str(data_dir)})

    segments = [
        (part.segment.topic_partition.topic, part.segment.base_offset)
        for part in reader.partitions()
    ]

    assert segments == [
        ("audit-log", 0),
        ("orders", 0),
        ("orders", 15),
        ("orders", 30),
        ("orders", 45),
        ("orders", 0),
        ("orders", 15),
    ]


def test_topic_option_is_a_full_match_regex(data_dir: Path) -> None:
    rows = read_all(SegmentReader({"path": str(data_dir), "topic": "audit.*"}))

    assert {row[0] for row in rows} == {"audit-log"}
    assert read_all(SegmentReader({"path": str(data_dir), "topic": "audit"})) == []


def test_unsupported_filters_are_left_to_spark(data_dir: Path) -> None:
    reader = SegmentReader({"path": str(data_dir)})
    prefix = StringStartsWith(("topic",), "ord")

    assert list(reader.pushFilters([prefix, EqualTo(("partition",), 1)])) == [prefix]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    view=st.sampled_from(["batches", "records"]),
    option_range=st.tuples(st.none() | st.integers(0, 55), st.none() | st.integers(0, 55)),
    pushed_range=st.tuples(st.none() | st.integers(0, 55), st.none() | st.integers(0, 55)),
    partitions=st.none() | st.sets(st.integers(0, 2)),
)
def test_pushdown_and_options_select_exactly_the_matching_rows(
    data_dir: Path,
    view: str,
    option_range: tuple[int | None, int | None],
    pushed_range: tuple[int | None, int | None],
    partitions: set[int] | None,
) -> None:
    everything = read_all(SegmentReader({"path": str(data_dir), "view": view}))
    options = {"path": str(data_dir), "view": view}
    start, end = option_range
    if start is not None:
        options["startOffset"] = str(start)
    if end is not None:
        options["endOffset"] = str(end)
    reader = SegmentReader(options)
    column = "offset" if view == "records" else "base_offset"
    low, high = pushed_range
    filters = [EqualTo(("topic",), "orders")]
    if low is not None:
        filters.append(GreaterThanOrEqual((column,), low))
    if high is not None:
        filters.append(LessThanOrEqual((column,), high) if high % 2 else LessThan((column,), high))
    if partitions is not None:
        filters.append(In(("partition",), tuple(partitions)))

    assert list(reader.pushFilters(filters)) == []
    rows = read_all(reader)

    def wanted(row: tuple) -> bool:
        position = row[2]
        last = row[3] if view == "batches" else position
        return (
            row[0] == "orders"
            and (partitions is None or row[1] in partitions)
            and (start is None or last >= start)
            and (end is None or position < end)
            and (low is None or position >= low)
            and (high is None or (position <= high if high % 2 else position < high))
        )

    assert rows == [row for row in everything if wanted(row)]


def test_spark_reads_pushed_filters(spark: SparkSession, data_dir: Path) -> None:
    frame = spark.read.format(FORMAT).option("view", "records").load(str(data_dir))

    selected = frame.where("topic = 'orders' and partition = 1 and offset >= 12 and offset < 14")

    assert [(row.offset, row.key) for row in selected.collect()] == [
        (12, b"key-12"),
        (13, b"key-13"),
    ]
    assert selected.first().headers[0].asDict() == {"key": "trace", "value": b"12"}
