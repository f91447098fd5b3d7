"""The convergence job on small logs: every kind of divergence is found where it is."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.spark_logs import BASE_TIMESTAMP, flip_byte, make_batches, write_partition
from pyspark.sql import DataFrame, SparkSession

from mirrorsim.protocol.records import Compression, RawBatch, Record, build_batch
from mirrorsim.verify.job import read_segments, verify_logs
from mirrorsim.verify.report import VerifyReport
from mirrorsim.verify.segment_source import FORMAT
from mirrorsim.verify.segments import TopicPartition

pytestmark = pytest.mark.spark

ORDERS_1 = TopicPartition("orders", 1)


def source_logs() -> dict[TopicPartition, list[RawBatch]]:
    return {
        TopicPartition("orders", 0): make_batches(10, leader_epoch=1),
        ORDERS_1: make_batches(12, leader_epoch=1),
        TopicPartition("pay-ments", 0): make_batches(6, compression=Compression.ZSTD),
    }


def write_logs(data_dir: Path, logs: dict[TopicPartition, list[RawBatch]]) -> Path:
    for tp, batches in logs.items():
        write_partition(data_dir, tp.topic, tp.partition, batches)
    return data_dir


def run(
    spark: SparkSession,
    tmp_path: Path,
    destination: dict[TopicPartition, list[RawBatch]],
    *,
    level: str = "batch",
    stop_offsets: dict[TopicPartition, int] | None = None,
    source: dict[TopicPartition, list[RawBatch]] | None = None,
) -> VerifyReport:
    source_dir = write_logs(tmp_path / "source", source or source_logs())
    destination_dir = write_logs(tmp_path / "destination", destination)
    return verify_logs(
        read_segments(spark, str(source_dir), level=level),
        read_segments(spark, str(destination_dir), level=level),
        level=level,
        stop_offsets=stop_offsets,
    )


def partition_row(report: VerifyReport, tp: TopicPartition) -> dict:
    [row] = [
        row
        for row in report.partitions
        if (row["topic"], row["partition"]) == (tp.topic, tp.partition)
    ]
    return row


def only_diverged(report: VerifyReport) -> dict:
    [row] = [row for row in report.partitions if row["status"] == "diverged"]
    return row


@pytest.mark.parametrize("level", ["batch", "record"])
def test_identical_logs_converge(spark: SparkSession, tmp_path: Path, level: str) -> None:
    report = run(spark, tmp_path, source_logs(), level=level)

    assert report.converged
    assert report.divergences == []
    assert {row["status"] for row in report.partitions} == {"converged"}
    assert partition_row(report, ORDERS_1)["lag"] == 0
    unit_count = 12 if level == "batch" else 60
    assert partition_row(report, ORDERS_1)["matched"] == unit_count


def test_flipped_byte_is_a_corrupt_batch(spark: SparkSession, tmp_path: Path) -> None:
    destination = source_logs()
    destination[ORDERS_1][7] = flip_byte(destination[ORDERS_1][7], position=80)

    report = run(spark, tmp_path, destination)

    assert not report.converged
    row = only_diverged(report)
    assert (row["topic"], row["partition"]) == ("orders", 1)
    assert row["first_unexpected_offset"] == 35
    assert row["first_unexpected_kind"] == "corrupt_batch"
    assert (row["first_unexpected_expected"], row["first_unexpected_found"]) == (
        "crc32c valid",
        "crc32c invalid",
    )


def test_missing_batch(spark: SparkSession, tmp_path: Path) -> None:
    destination = source_logs()
    del destination[ORDERS_1][4]

    report = run(spark, tmp_path, destination)

    row = only_diverged(report)
    assert (row["partition"], row["first_unexpected_offset"]) == (1, 20)
    assert row["first_unexpected_kind"] == "missing_batch"
    assert row["first_unexpected_expected"] == "batch 20..24 epoch 1"
    assert row["first_unexpected_found"] == "absent"
    assert row["unexpected_divergences"] == 1


def test_shifted_offset(spark: SparkSession, tmp_path: Path) -> None:
    destination = source_logs()
    shifted = destination[ORDERS_1]
    moved = [batch.with_base_offset(batch.base_offset + 1) for batch in shifted[9:]]
    destination[ORDERS_1] = shifted[:9] + moved

    report = run(spark, tmp_path, destination)

    row = only_diverged(report)
    assert (row["partition"], row["first_unexpected_offset"]) == (1, 45)
    assert row["first_unexpected_kind"] == "missing_batch"
    listed = {(d["offset"], d["kind"]) for d in report.divergences}
    assert (46, "extra_batch") in listed


def test_wrong_leader_epoch(spark: SparkSession, tmp_path: Path) -> None:
    destination = source_logs()
    destination[ORDERS_1][10] = destination[ORDERS_1][10].with_partition_leader_epoch(2)

    report = run(spark, tmp_path, destination)

    row = only_diverged(report)
    assert (row["partition"], row["first_unexpected_offset"]) == (1, 50)
    assert row["first_unexpected_kind"] == "leader_epoch_mismatch"
    assert (row["first_unexpected_expected"], row["first_unexpected_found"]) == (
        "leader epoch 1",
        "leader epoch 2",
    )


def test_a_prefix_is_lag_not_divergence(spark: SparkSession, tmp_path: Path) -> None:
    destination = source_logs()
    destination[ORDERS_1] = destination[ORDERS_1][:5]

    report = run(spark, tmp_path, destination)

    assert report.converged
    row = partition_row(report, ORDERS_1)
    assert (row["status"], row["lag"], row["destination_log_end_offset"]) == ("lagging", 35, 25)


def failover_logs() -> tuple[dict, dict]:
    """Mirroring stopped at offset 30; then each side took its own writes."""
    source = source_logs()
    source[ORDERS_1] = make_batches(6, leader_epoch=1) + make_batches(
        4, start_offset=30, leader_epoch=1, salt="-source-after-stop"
    )
    destination = source_logs()
    destination[ORDERS_1] = make_batches(6, leader_epoch=1) + make_batches(
        5, start_offset=30, leader_epoch=2, salt="-destination-after-failover"
    )
    return source, destination


def test_divergence_beyond_the_stop_offset_is_expected(spark: SparkSession, tmp_path: Path) -> None:
    source, destination = failover_logs()

    report = run(spark, tmp_path, destination, source=source, stop_offsets={ORDERS_1: 30})

    assert report.converged
    row = partition_row(report, ORDERS_1)
    assert row["status"] == "stopped"
    assert row["expected_divergences"] == 5
    assert {d["classification"] for d in report.divergences} == {"expected"}
    assert min(d["offset"] for d in report.divergences) == 30


def test_divergence_before_the_stop_offset_stays_unexpected(
    spark: SparkSession, tmp_path: Path
) -> None:
    source, destination = failover_logs()

    report = run(spark, tmp_path, destination, source=source, stop_offsets={ORDERS_1: 40})

    assert not report.converged
    row = partition_row(report, ORDERS_1)
    assert (row["first_unexpected_offset"], row["unexpected_divergences"]) == (30, 2)


def test_record_level_names_the_record(spark: SparkSession, tmp_path: Path) -> None:
    destination = source_logs()
    rewritten = make_batches(1, start_offset=15, leader_epoch=1, salt="!")[0]
    destination[ORDERS_1][3] = rewritten

    batch_report = run(spark, tmp_path / "batch", destination)
    record_report = run(spark, tmp_path / "record", destination, level="record")

    batch_row = only_diverged(batch_report)
    assert (batch_row["first_unexpected_offset"], batch_row["first_unexpected_kind"]) == (
        15,
        "crc_mismatch",
    )
    record_row = only_diverged(record_report)
    assert (record_row["first_unexpected_offset"], record_row["first_unexpected_kind"]) == (
        15,
        "value_mismatch",
    )
    assert record_row["unexpected_divergences"] == 5


def long_value_batches(*, changed: dict[int, Record] | None = None) -> list[RawBatch]:
    """Ten batches of five records with 200-byte values and 40-byte keys (both past what a
    digest keeps inline), a header each, and a null key every seventh offset; ``changed``
    replaces the records at its offsets."""
    changed = changed or {}
    batches = []
    for first in range(0, 50, 5):
        records = [
            changed.get(
                offset,
                Record(
                    offset,
                    BASE_TIMESTAMP + offset,
                    None if offset % 7 == 0 else f"customer-{offset:04d}".encode() * 3,
                    bytes([offset]) * 200,
                    (("trace", str(offset).encode()),),
                ),
            )
            for offset in range(first, first + 5)
        ]
        batches.append(build_batch(records, base_offset=first, compression=Compression.LZ4))
    return batches


def test_record_level_finds_a_value_that_differs_past_its_shown_prefix(
    spark: SparkSession, tmp_path: Path
) -> None:
    source = {ORDERS_1: long_value_batches()}
    changed = bytearray(bytes([12]) * 200)
    changed[150] = 0
    edited = Record(
        12, BASE_TIMESTAMP + 12, b"customer-0012" * 3, bytes(changed), (("trace", b"12"),)
    )
    destination = {ORDERS_1: long_value_batches(changed={12: edited})}

    report = run(spark, tmp_path, destination, source=source, level="record")

    row = only_diverged(report)
    assert (row["first_unexpected_offset"], row["first_unexpected_kind"]) == (12, "value_mismatch")
    shown = "value 0x" + "0c" * 16 + "..."
    assert (row["first_unexpected_expected"], row["first_unexpected_found"]) == (shown, shown)
    assert (row["matched"], row["unexpected_divergences"]) == (49, 1)


def read_view(spark: SparkSession, data_dir: Path, view: str) -> DataFrame:
    return spark.read.format(FORMAT).option("view", view).load(str(data_dir))


def test_record_digests_report_what_comparing_the_bytes_reports(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The record level compares digests of keys and values; every kind of divergence
    must come out as comparing the keys and values themselves (the ``records`` view)
    says, down to how the report prints them."""
    source = {ORDERS_1: long_value_batches(), TopicPartition("orders", 0): make_batches(4)}
    destination_records = {
        3: Record(3, BASE_TIMESTAMP + 3, b"customer-0003" * 3, bytes([3]) * 199 + b"!", ()),
        8: Record(8, BASE_TIMESTAMP + 8, b"customer-0008" * 3 + b"?", bytes([8]) * 200, ()),
        9: Record(9, BASE_TIMESTAMP + 9, b"", bytes([9]) * 200, (("trace", b"9"),)),
        14: Record(14, BASE_TIMESTAMP + 14, None, bytes([14]) * 200, (("trace", b"X"),)),
        16: Record(16, BASE_TIMESTAMP, b"customer-0016" * 3, bytes([16]) * 200, ()),
        21: Record(21, BASE_TIMESTAMP + 21, None, None, (("trace", None),)),
        31: Record(31, BASE_TIMESTAMP + 31, b"k", b"short value", (("trace", b"31"),)),
    }
    destination_log = long_value_batches(changed=destination_records)
    del destination_log[5]
    destination = {
        ORDERS_1: destination_log + make_batches(2, start_offset=50, salt="extra"),
        TopicPartition("orders", 0): make_batches(4),
    }
    source_dir = write_logs(tmp_path / "source", source)
    destination_dir = write_logs(tmp_path / "destination", destination)

    reports = [
        verify_logs(
            read_view(spark, source_dir, view),
            read_view(spark, destination_dir, view),
            level="record",
            stop_offsets={ORDERS_1: 40},
        ).to_dict()
        for view in ("records", "record_digests")
    ]

    assert reports[0] == reports[1]
    kinds = {(row["offset"], row["kind"]) for row in reports[0]["divergences"]}
    assert {
        (3, "value_mismatch"),
        (8, "key_mismatch"),
        (9, "key_mismatch"),
        (14, "headers_mismatch"),
        (16, "timestamp_mismatch"),
        (21, "value_mismatch"),
        (25, "missing_record"),
        (31, "key_mismatch"),
        (50, "extra_record"),
    } <= kinds
    assert {row["classification"] for row in reports[0]["divergences"] if row["offset"] >= 40} == {
        "expected"
    }
