"""`mirrorsim verify` end to end: output, JSON report, exit code, and a standalone cluster."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pyspark
import pytest
from click.testing import CliRunner
from helpers.spark_logs import make_batches, write_partition
from pyspark.sql import SparkSession

from mirrorsim.cli.cmd_verify import verify
from mirrorsim.drills.polling import wait_until_blocking
from mirrorsim.verify.session import prepare_environment

pytestmark = pytest.mark.spark


@pytest.fixture
def logs(tmp_path: Path) -> tuple[Path, Path]:
    source, destination = tmp_path / "source", tmp_path / "destination"
    batches = make_batches(8, leader_epoch=3)
    write_partition(source, "orders", 0, batches)
    write_partition(destination, "orders", 0, batches)
    write_partition(source, "orders", 1, batches)
    rewritten = batches[2].with_partition_leader_epoch(4)
    write_partition(destination, "orders", 1, [*batches[:2], rewritten])
    write_partition(source, "clicks", 0, batches)
    write_partition(destination, "clicks", 0, batches[:6])
    return source, destination


def run_cli(spark: SparkSession, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(verify, ["--master", "local[2]", *args])
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit
    ), result.exception
    return result.exit_code, result.stdout


def test_divergence_fails_with_partition_offset_expected_found(
    spark: SparkSession, logs: tuple[Path, Path], tmp_path: Path
) -> None:
    source, destination = logs
    report_path = tmp_path / "report.json"

    code, out = run_cli(
        spark,
        "--source-dir",
        str(source),
        "--destination-dir",
        str(destination),
        "--report",
        str(report_path),
    )

    assert code == 1
    assert "NOT converged: 1 unexpected, 0 expected divergence(s)" in out
    assert "leader_epoch_mismatch" in out
    report = json.loads(report_path.read_text())
    assert report["converged"] is False
    [divergence] = report["divergences"]
    assert (divergence["topic"], divergence["partition"], divergence["offset"]) == ("orders", 1, 10)
    assert (divergence["expected"], divergence["found"]) == ("leader epoch 3", "leader epoch 4")
    statuses = {(row["topic"], row["partition"]): row["status"] for row in report["partitions"]}
    assert statuses == {
        ("clicks", 0): "lagging",
        ("orders", 0): "converged",
        ("orders", 1): "diverged",
    }


def test_topic_filter_and_stop_offsets_make_it_pass(
    spark: SparkSession, logs: tuple[Path, Path], tmp_path: Path
) -> None:
    source, destination = logs
    stops = tmp_path / "stops.json"
    stops.write_text(json.dumps({"orders-1": 10}))

    code, out = run_cli(
        spark,
        "--source-dir",
        str(source),
        "--destination-dir",
        str(destination),
        "--topic",
        "ord.*",
        "--stop-offsets",
        str(stops),
    )

    assert code == 0, out
    assert "converged: 0 unexpected, 1 expected divergence(s)" in out
    assert "clicks" not in out


def test_a_cluster_data_dir_is_read_from_each_partitions_longest_replica(
    spark: SparkSession, tmp_path: Path
) -> None:
    cluster, destination = tmp_path / "cluster", tmp_path / "destination"
    batches = make_batches(6)
    write_partition(cluster / "broker-1", "orders", 0, batches[:3])
    write_partition(cluster / "broker-2", "orders", 0, batches)
    write_partition(cluster / "broker-3", "orders", 1, batches)
    write_partition(destination, "orders", 0, batches)
    write_partition(destination, "orders", 1, batches)

    result = CliRunner().invoke(
        verify,
        [
            "--master",
            "local[2]",
            "--source-dir",
            str(cluster),
            "--destination-dir",
            str(destination),
        ],
    )

    assert result.exit_code == 0, result.output
    assert "converged: 0 unexpected, 0 expected divergence(s)" in result.stdout
    assert "--source-dir: orders-0 from broker-2 (longest of 2 replica(s)" in result.stderr
    assert "--source-dir: orders-1 from broker-3 (longest of 1 replica(s)" in result.stderr


def test_the_installed_command_prints_the_whole_table_without_sparks_start_up_lines(
    logs: tuple[Path, Path],
) -> None:
    source, destination = logs
    mirrorsim = str(Path(sys.executable).parent / "mirrorsim")
    args = ["verify", "--source-dir", str(source), "--destination-dir", str(destination)]

    result = subprocess.run(
        [mirrorsim, *args, "--master", "local[2]"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )

    assert result.returncode == 1, result.stderr
    header = next(line for line in result.stdout.splitlines() if "FIRST-UNEXPECTED" in line)
    assert len(header) > 80 and "DESTINATION-LEO" in header
    for noise in ("log4j2-defaults", "Setting default log level", "NativeCodeLoader"):
        assert noise not in result.stderr
    jvm_notice = "WARNING: Using incubator modules: jdk.incubator.vector"
    assert [line for line in result.stderr.splitlines() if line != jvm_notice] == []


def test_bad_stop_offsets_file_is_a_user_error(
    spark: SparkSession, logs: tuple[Path, Path], tmp_path: Path
) -> None:
    source, destination = logs
    stops = tmp_path / "stops.json"
    stops.write_text(json.dumps({"no partition here": 10}))

    result = CliRunner().invoke(
        verify,
        [
            "--source-dir",
            str(source),
            "--destination-dir",
            str(destination),
            "--stop-offsets",
            str(stops),
        ],
    )

    assert result.exit_code == 1
    assert result.stderr == "Error: not a topic partition: 'no partition here'\n"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json", timeout=2) as response:
            return json.load(response)["aliveworkers"]
    except OSError:
        return 0


@pytest.fixture
def standalone_master(tmp_path: Path) -> Iterator[str]:
    """A Spark master and one worker on 127.0.0.1, both stopped at teardown."""
    prepare_environment()
    spark_class = str(Path(pyspark.__file__).parent / "bin" / "spark-class")
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": str(tmp_path)}
    master_port, master_ui, worker_port, worker_ui = (free_port() for _ in range(4))
    url = f"spark://127.0.0.1:{master_port}"
    commands = [
        [
            spark_class,
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(master_port),
            "--webui-port",
            str(master_ui),
        ],
        [
            spark_class,
            "org.apache.spark.deploy.worker.Worker",
            url,
            "--host",
            "127.0.0.1",
            "--port",
            str(worker_port),
            "--webui-port",
            str(worker_ui),
            "--cores",
            "2",
            "--memory",
            "2g",
            "--work-dir",
            str(tmp_path / "work"),
        ],
    ]
    processes = []
    try:
        for name, command in zip(("master", "worker"), commands, strict=True):
            log = (tmp_path / f"{name}.log").open("wb")
            processes.append(
                subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
            )
        wait_until_blocking(lambda: alive_workers(master_ui) == 1, 90, "a worker to register")
        yield url
    finally:
        for process in reversed(processes):
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_standalone_cluster_gives_the_local_report(
    spark: SparkSession, logs: tuple[Path, Path], tmp_path: Path, standalone_master: str
) -> None:
    source, destination = logs
    local_report, cluster_report = tmp_path / "local.json", tmp_path / "cluster.json"
    run_cli(
        spark,
        "--source-dir",
        str(source),
        "--destination-dir",
        str(destination),
        "--report",
        str(local_report),
    )

    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "mirrorsim.cli.cmd_verify",
            "--master",
            standalone_master,
            "--source-dir",
            str(source),
            "--destination-dir",
            str(destination),
            "--report",
            str(cluster_report),
        ],
        capture_output=True,
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
        timeout=600,  # 120 s alone; a loaded machine has taken twice that
        check=False,
    )

    assert completed.returncode == 1, completed.stderr.decode()[-3000:]
    assert json.loads(cluster_report.read_text()) == json.loads(local_report.read_text())
