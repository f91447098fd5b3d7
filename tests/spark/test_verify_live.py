"""`mirrorsim verify --source/--destination` against two live clusters joined by a mirror."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers.live_clusters import (
    MIRROR,
    SYNCED_GROUPS,
    ClusterThread,
    log_end_offset,
    mirror_state,
    produce,
    wait_until,
)
from pyspark.sql import SparkSession

from mirrorsim.broker.cluster import ClusterRunner
from mirrorsim.cli.cmd_verify import verify
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic, TopicPartition

pytestmark = pytest.mark.spark

ORDERS_PARTITIONS = 3


@dataclass
class Mirrored:
    source: ClusterRunner
    destination: ClusterRunner
    payments_stop_offset: int


@pytest.fixture(scope="module")
def cluster_thread() -> Iterator[ClusterThread]:
    thread = ClusterThread()
    yield thread
    thread.close()


@pytest.fixture(scope="module")
def mirrored(cluster_thread: ClusterThread, tmp_path_factory: pytest.TempPathFactory) -> Mirrored:
    """``orders`` mirrored and converged; ``payments`` mirrored, then stopped (as at
    failover) and written on the source only; group commits on both sides."""
    root = tmp_path_factory.mktemp("mirrored")
    source = cluster_thread.start_cluster("primary", root)
    destination = cluster_thread.start_cluster("backup", root)

    async def mirror() -> None:
        async with Admin(source.bootstrap) as admin:
            (await admin.create_topics([NewTopic("orders", ORDERS_PARTITIONS, 1)])).all()
            (await admin.create_topics([NewTopic("payments", 1, 1)])).all()
        for round_number in range(3):
            await produce(source.bootstrap, "orders", 30, tag=f"r{round_number}", partitions=3)
        await produce(source.bootstrap, "payments", 20, tag="paid", partitions=1)
        async with Admin(destination.bootstrap) as admin:
            await admin.create_mirror(
                MIRROR,
                {"bootstrap.servers": source.bootstrap, "mirror.groups.include": SYNCED_GROUPS},
            )
            (await admin.add_topics_to_mirror(MIRROR, ["orders", "payments"])).all()
        for topic, partition in [*(("orders", p) for p in range(3)), ("payments", 0)]:
            await wait_until(
                lambda t=topic, p=partition: (
                    log_end_offset(destination, t, p) == log_end_offset(source, t, p)
                ),
                f"{topic}-{partition} to be mirrored",
            )

    async def stop_payments() -> int:
        stop_offset = log_end_offset(destination, "payments", 0)
        async with Admin(destination.bootstrap) as admin:
            (await admin.remove_topics_from_mirror(MIRROR, ["payments"])).all()
        await wait_until(
            lambda: mirror_state(destination, "payments", 0) == "STOPPED", "payments to stop"
        )
        await produce(source.bootstrap, "payments", 6, tag="after-stop", partitions=1)
        return stop_offset

    async def commit() -> None:
        commits = {
            source: {"app-same": 10, "app-behind": 20},
            destination: {"app-same": 10, "app-behind": 12},
        }
        for cluster, groups in commits.items():
            async with Admin(cluster.bootstrap) as admin:
                for group, offset in groups.items():
                    await admin.alter_consumer_group_offsets(
                        group, {TopicPartition("orders", 0): offset}
                    )

    cluster_thread.run(mirror())
    stop_offset = cluster_thread.run(stop_payments())
    cluster_thread.run(commit())
    return Mirrored(source, destination, stop_offset)


def run_cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(verify, ["--master", "local[2]", *args])
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit
    ), result.exception
    return result.exit_code, result.stdout, result.stderr


def live(mirrored: Mirrored, *args: str) -> list[str]:
    return [
        "--source", mirrored.source.bootstrap,
        "--destination", mirrored.destination.bootstrap,
        *args,
    ]  # fmt: skip


def test_identical_clusters_converge(
    spark: SparkSession, mirrored: Mirrored, tmp_path: Path
) -> None:
    report_path = tmp_path / "report.json"

    code, out, _ = run_cli(*live(mirrored, "--topic", "orders", "--report", str(report_path)))

    assert code == 0, out
    assert "converged: 0 unexpected, 0 expected divergence(s)" in out
    report = json.loads(report_path.read_text())
    assert [(row["partition"], row["status"]) for row in report["partitions"]] == [
        (p, "converged") for p in range(ORDERS_PARTITIONS)
    ]
    assert all(row["matched"] > 1 for row in report["partitions"])


def test_identical_clusters_converge_record_by_record(
    spark: SparkSession, mirrored: Mirrored
) -> None:
    code, out, _ = run_cli(*live(mirrored, "--topic", "orders", "--level", "record"))

    assert code == 0, out
    assert "converged: 0 unexpected, 0 expected divergence(s)" in out


def test_divergence_after_a_stop_is_reported_at_its_partition_and_offset(
    spark: SparkSession, mirrored: Mirrored, tmp_path: Path
) -> None:
    report_path = tmp_path / "report.json"

    code, out, _ = run_cli(*live(mirrored, "--topic", "payments", "--report", str(report_path)))

    assert code == 1
    assert "NOT converged" in out
    report = json.loads(report_path.read_text())
    [partition] = report["partitions"]
    assert (partition["topic"], partition["partition"]) == ("payments", 0)
    assert partition["status"] == "diverged"
    assert partition["first_unexpected_offset"] == mirrored.payments_stop_offset
    first = report["divergences"][0]
    assert (first["topic"], first["partition"], first["offset"]) == (
        "payments",
        0,
        mirrored.payments_stop_offset,
    )


def test_stop_offsets_make_the_divergence_expected(
    spark: SparkSession, mirrored: Mirrored, tmp_path: Path
) -> None:
    stops = tmp_path / "stops.json"
    stops.write_text(json.dumps({"payments-0": mirrored.payments_stop_offset}))

    code, out, _ = run_cli(*live(mirrored, "--topic", "payments", "--stop-offsets", str(stops)))

    assert code == 0, out
    assert "converged: 0 unexpected" in out


def test_group_commits_are_read_from_both_clusters(
    spark: SparkSession, mirrored: Mirrored, tmp_path: Path
) -> None:
    report_path = tmp_path / "report.json"

    code, _, _ = run_cli(
        *live(mirrored, "--topic", "orders", "--groups", "app-.*", "--report", str(report_path))
    )

    assert code == 1
    groups = {row["group"]: row for row in json.loads(report_path.read_text())["groups"]}
    assert set(groups) == {"app-same", "app-behind"}
    assert groups["app-same"]["kind"] == "match"
    behind = groups["app-behind"]
    assert (behind["kind"], behind["classification"]) == ("commit_offset_mismatch", "unexpected")
    assert (behind["source_committed_offset"], behind["destination_committed_offset"]) == (
        20,
        12,
    )


def test_groups_regex_selects_groups(spark: SparkSession, mirrored: Mirrored) -> None:
    code, out, _ = run_cli(*live(mirrored, "--topic", "orders", "--groups", "app-same"))

    assert code == 0, out


@pytest.mark.parametrize(
    "args",
    [
        ["--source", "127.0.0.1:1"],
        ["--source", "127.0.0.1:1", "--destination-dir", "."],
        ["--source-dir", ".", "--destination-dir", ".", "--groups", ".*"],
    ],
)
def test_mode_options_must_pair_up(args: list[str]) -> None:
    result = CliRunner().invoke(verify, args)

    assert result.exit_code == 1
    assert result.stderr.startswith("Error: ")


def test_an_unreachable_cluster_is_one_error_line(
    spark: SparkSession, mirrored: Mirrored, tmp_path: Path, free_port: Any
) -> None:
    config = tmp_path / "client.properties"
    config.write_text("default.api.timeout.ms=300\nreconnect.backoff.max.ms=50\n")

    code, _, err = run_cli(
        "--source", f"127.0.0.1:{free_port()}", "--source-config", str(config),
        "--destination", mirrored.destination.bootstrap,
    )  # fmt: skip

    assert code == 1
    assert err.startswith("Error: reading the clusters failed: KafkaConnectionError: ")
    assert len(err.strip().splitlines()) == 1
