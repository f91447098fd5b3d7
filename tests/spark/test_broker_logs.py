"""`mirrorsim verify --source-dir/--destination-dir` on segments written by real brokers.

Two in-process clusters: clients produce to ``primary`` with several codecs, the real
mirror copies to ``backup``, one topic fails over, and both clusters stop so that their
segments are flushed and closed. Every test then verifies one broker's data dir per
cluster; the fault tests damage a copy of the destination's dir first.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers.live_clusters import (
    MIRROR,
    ClusterThread,
    log_end_offset,
    mirror_state,
    produce,
    wait_until,
)
from helpers.segment_faults import (
    drop_batch,
    flip_record_byte,
    read_segment,
    restamp_leader_epoch,
    segment_with_batches,
    shift_base_offset,
)
from pyspark.sql import SparkSession

from mirrorsim.broker.cluster import ClusterRunner
from mirrorsim.cli.cmd_verify import verify
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.protocol.records import RawBatch

pytestmark = pytest.mark.spark

ORDERS_PARTITIONS = 3
CODECS = ("gzip", "lz4", None, "zstd")
FAILED_OVER = "payments"
DAMAGED = ("orders", 1)
DAMAGED_BATCH = 1  # a batch in the middle of the segment: one before it, more after


@dataclass(frozen=True)
class BrokerLogs:
    source_dir: Path
    destination_dir: Path
    payments_stop_offset: int


def broker_dir(cluster: ClusterRunner) -> Path:
    """The data dir of the cluster's only broker, in Kafka's `<topic>-<partition>` layout."""
    [broker] = cluster.brokers
    return Path(broker.data_dir)


@pytest.fixture(scope="module")
def broker_logs(tmp_path_factory: pytest.TempPathFactory) -> BrokerLogs:
    """``orders`` mirrored until the lag is 0; ``payments`` mirrored, failed over, and
    then written on the source only. The clusters are stopped before any test runs."""
    root = tmp_path_factory.mktemp("broker-logs")
    clusters = ClusterThread()
    try:
        source = clusters.start_cluster("primary", root)
        destination = clusters.start_cluster("backup", root)
        clusters.run(_produce_and_mirror(source, destination))
        last_mirror_epoch = clusters.run(_fail_over_payments(source, destination))
        source_dir, destination_dir = broker_dir(source), broker_dir(destination)
    finally:
        clusters.close()
    stop_offset = epoch_end_offset(destination_dir / f"{FAILED_OVER}-0", last_mirror_epoch)
    return BrokerLogs(source_dir, destination_dir, stop_offset)


def epoch_end_offset(partition_dir: Path, epoch: int) -> int:
    """Where ``epoch`` ends in a partition's log: the start offset of the next epoch in
    the leader-epoch-checkpoint (lines: version, count, then ``epoch start_offset``)."""
    lines = (partition_dir / "leader-epoch-checkpoint").read_text().split("\n")
    entries = [tuple(map(int, line.split())) for line in lines[2:] if line.strip()]
    return min(start for entry_epoch, start in entries if entry_epoch > epoch)


async def _produce_and_mirror(source: ClusterRunner, destination: ClusterRunner) -> None:
    async with Admin(source.bootstrap) as admin:
        (await admin.create_topics([NewTopic("orders", ORDERS_PARTITIONS, 1)])).all()
        (await admin.create_topics([NewTopic(FAILED_OVER, 1, 1)])).all()
    for round_number, codec in enumerate(CODECS):
        await produce(
            source.bootstrap, "orders", 30, tag=f"r{round_number}",
            partitions=ORDERS_PARTITIONS, compression=codec,
        )  # fmt: skip
    await produce(source.bootstrap, FAILED_OVER, 20, tag="paid", partitions=1, compression="lz4")
    async with Admin(destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, ["orders", FAILED_OVER])).all()
        await _wait_for_zero_lag(admin, source)


async def _wait_for_zero_lag(admin: Admin, source: ClusterRunner) -> None:
    """DescribeMirrors reports every partition at lag 0 and at the source's log end."""
    source_log_ends = {
        (topic, partition): log_end_offset(source, topic, partition)
        for topic, partition in [
            *(("orders", p) for p in range(ORDERS_PARTITIONS)),
            (FAILED_OVER, 0),
        ]
    }

    async def caught_up() -> bool:
        [mirror] = (await admin.describe_mirrors([MIRROR])).values()
        at_zero_lag = {
            (p.topic, p.partition): p.destination_offset for p in mirror.partitions if p.lag == 0
        }
        return at_zero_lag == source_log_ends

    await wait_until(caught_up, "every mirrored partition at lag 0")


async def _fail_over_payments(source: ClusterRunner, destination: ClusterRunner) -> int:
    """Stop mirroring ``payments`` (a failover) and write more on the source; the last
    mirror epoch DescribeMirrors reports for the stopped partition is returned."""
    async with Admin(destination.bootstrap) as admin:
        (await admin.remove_topics_from_mirror(MIRROR, [FAILED_OVER])).all()
        await wait_until(
            lambda: mirror_state(destination, FAILED_OVER, 0) == "STOPPED", "payments to stop"
        )
        [mirror] = (await admin.describe_mirrors([MIRROR])).values()
    [stopped] = [p for p in mirror.partitions if p.topic == FAILED_OVER]
    assert (stopped.state, stopped.lag) == ("STOPPED", 0)
    await produce(source.bootstrap, FAILED_OVER, 6, tag="after-stop", partitions=1)
    return stopped.last_mirror_epoch


def run_cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(verify, ["--master", "local[2]", *args])
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit
    ), result.exception
    return result.exit_code, result.stdout


def verify_dirs(
    source_dir: Path, destination_dir: Path, tmp_path: Path, *args: str
) -> tuple[int, str, dict[str, Any]]:
    report_path = tmp_path / "report.json"
    code, out = run_cli(
        "--source-dir", str(source_dir), "--destination-dir", str(destination_dir),
        "--report", str(report_path), *args,
    )  # fmt: skip
    return code, out, json.loads(report_path.read_text())


def batches_of(data_dir: Path, topic: str, partition: int) -> list[RawBatch]:
    return [
        batch
        for segment in sorted((data_dir / f"{topic}-{partition}").glob("*.log"))
        for batch in read_segment(segment)
    ]


def test_the_brokers_wrote_several_codecs_into_several_batches(
    spark: SparkSession, broker_logs: BrokerLogs
) -> None:
    batches = (
        spark.read.format("mirrorsim-segments")
        .option("view", "batches")
        .option("topic", "orders")
        .load(str(broker_logs.source_dir))
    )

    codecs = {row.compression for row in batches.select("compression").distinct().collect()}
    per_partition = {
        row.partition: row["count"] for row in batches.groupBy("partition").count().collect()
    }

    assert codecs == {"gzip", "lz4", "none", "zstd"}
    assert per_partition == {p: len(CODECS) for p in range(ORDERS_PARTITIONS)}


def test_identical_logs_pass_batch_by_batch(
    spark: SparkSession, broker_logs: BrokerLogs, tmp_path: Path
) -> None:
    code, out, report = verify_dirs(
        broker_logs.source_dir, broker_logs.destination_dir, tmp_path, "--topic", "orders"
    )

    assert code == 0, out
    assert "converged: 0 unexpected, 0 expected divergence(s)" in out
    assert [(row["partition"], row["status"], row["matched"]) for row in report["partitions"]] == [
        (p, "converged", len(batches_of(broker_logs.source_dir, "orders", p)))
        for p in range(ORDERS_PARTITIONS)
    ]


def test_identical_logs_pass_record_by_record(
    spark: SparkSession, broker_logs: BrokerLogs, tmp_path: Path
) -> None:
    code, out, report = verify_dirs(
        broker_logs.source_dir, broker_logs.destination_dir, tmp_path,
        "--topic", "orders", "--level", "record",
    )  # fmt: skip

    assert code == 0, out
    assert report["level"] == "record"
    assert sum(row["matched"] for row in report["partitions"]) == 30 * len(CODECS)


def described(batch: RawBatch) -> str:
    return f"batch {batch.base_offset}..{batch.last_offset} epoch {batch.partition_leader_epoch}"


@dataclass(frozen=True)
class Fault:
    """A fault injected into the damaged batch, the divergences it must produce (offset
    relative to the batch's base offset, kind), and what the first one reports as
    expected and found, given the batch as the broker wrote it."""

    inject: Callable[[Path, int], RawBatch]
    divergences: tuple[tuple[int, str], ...]
    expected_and_found: Callable[[RawBatch], tuple[str, str]]


FAULTS = {
    "flipped byte": Fault(
        flip_record_byte,
        ((0, "corrupt_batch"),),
        lambda _: ("crc32c valid", "crc32c invalid"),
    ),
    "missing batch": Fault(
        drop_batch, ((0, "missing_batch"),), lambda batch: (described(batch), "absent")
    ),
    "shifted offset": Fault(
        lambda segment, index: shift_base_offset(segment, index, by=1),
        ((0, "missing_batch"), (1, "extra_batch")),
        lambda batch: (described(batch), "absent"),
    ),
    "wrong leader epoch": Fault(
        lambda segment, index: restamp_leader_epoch(segment, index, epoch=7),
        ((0, "leader_epoch_mismatch"),),
        lambda batch: (f"leader epoch {batch.partition_leader_epoch}", "leader epoch 7"),
    ),
}


@pytest.mark.parametrize("fault", FAULTS.values(), ids=FAULTS.keys())
def test_a_fault_on_the_destination_is_reported_at_its_partition_and_offset(
    spark: SparkSession, broker_logs: BrokerLogs, tmp_path: Path, fault: Fault
) -> None:
    damaged_dir = tmp_path / "backup"
    shutil.copytree(broker_logs.destination_dir, damaged_dir)
    topic, partition = DAMAGED
    segment = segment_with_batches(damaged_dir / f"{topic}-{partition}", DAMAGED_BATCH + 2)
    original = fault.inject(segment, DAMAGED_BATCH)

    code, out, report = verify_dirs(broker_logs.source_dir, damaged_dir, tmp_path, "--topic", topic)

    assert code == 1
    assert "NOT converged" in out
    assert [
        (row["topic"], row["partition"], row["offset"], row["kind"], row["classification"])
        for row in report["divergences"]
    ] == [
        (topic, partition, original.base_offset + delta, kind, "unexpected")
        for delta, kind in fault.divergences
    ]
    statuses = {row["partition"]: row["status"] for row in report["partitions"]}
    assert statuses == {p: "diverged" if p == partition else "converged" for p in statuses}
    damaged = next(row for row in report["partitions"] if row["partition"] == partition)
    assert (
        damaged["first_unexpected_offset"],
        damaged["first_unexpected_kind"],
        damaged["first_unexpected_expected"],
        damaged["first_unexpected_found"],
    ) == (original.base_offset, fault.divergences[0][1], *fault.expected_and_found(original))


def test_epoch_and_offset_faults_keep_a_valid_crc(broker_logs: BrokerLogs, tmp_path: Path) -> None:
    damaged_dir = tmp_path / "backup"
    shutil.copytree(broker_logs.destination_dir, damaged_dir)
    segment = segment_with_batches(damaged_dir / "orders-1", DAMAGED_BATCH + 2)

    restamp_leader_epoch(segment, DAMAGED_BATCH, epoch=7)
    shift_base_offset(segment, DAMAGED_BATCH + 1, by=1)

    assert all(batch.is_valid() for batch in read_segment(segment))


def test_a_post_failover_divergence_is_unexpected_without_a_stop_offset(
    spark: SparkSession, broker_logs: BrokerLogs, tmp_path: Path
) -> None:
    code, out, report = verify_dirs(
        broker_logs.source_dir, broker_logs.destination_dir, tmp_path, "--topic", FAILED_OVER
    )

    assert code == 1
    assert "NOT converged" in out
    [partition] = report["partitions"]
    assert (partition["status"], partition["first_unexpected_offset"]) == (
        "diverged",
        broker_logs.payments_stop_offset,
    )


def test_a_post_failover_divergence_is_expected_past_the_stop_offset(
    spark: SparkSession, broker_logs: BrokerLogs, tmp_path: Path
) -> None:
    stops = tmp_path / "stops.json"
    stops.write_text(json.dumps({f"{FAILED_OVER}-0": broker_logs.payments_stop_offset}))

    code, out, report = verify_dirs(
        broker_logs.source_dir, broker_logs.destination_dir, tmp_path,
        "--topic", f"orders|{FAILED_OVER}", "--stop-offsets", str(stops),
    )  # fmt: skip

    assert code == 0, out
    assert report["unexpected_divergences"] == 0
    assert report["expected_divergences"] >= 1
    assert {
        (row["topic"], row["offset"], row["classification"]) for row in report["divergences"]
    } == {(FAILED_OVER, broker_logs.payments_stop_offset, "expected")}
    statuses = {(row["topic"], row["partition"]): row["status"] for row in report["partitions"]}
    assert statuses == {
        **{("orders", p): "converged" for p in range(ORDERS_PARTITIONS)},
        (FAILED_OVER, 0): "stopped",
    }
