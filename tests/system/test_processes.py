"""Brokers as OS processes: the supervisor, SIGTERM/SIGKILL, restarts, ``up --processes``."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from helpers.processes import process_clusters

from mirrorsim.broker.supervisor import ProcessCluster
from mirrorsim.client import Admin

pytestmark = pytest.mark.system


@pytest.fixture
async def process_cluster(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    async with process_clusters(tmp_path) as start:
        yield start


async def live_broker_ids(cluster: ProcessCluster) -> set[int]:
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        description = await admin.describe_cluster()
    return {b.node_id for b in description.brokers}


async def test_sigterm_stops_a_broker_cleanly_and_restart_keeps_its_port(
    process_cluster: Callable[..., Any], wait_for: Any
) -> None:
    cluster = await process_cluster()
    assert await live_broker_ids(cluster) == {1, 2, 3}
    port = cluster.brokers[2].port
    assert await cluster.kill(2, signal.SIGTERM) == 0
    assert 2 not in await live_broker_ids(cluster)
    await cluster.restart(2)
    assert cluster.brokers[2].port == port
    await wait_for(
        lambda: _contains(live_broker_ids(cluster), 2), timeout=10, message="broker 2 back"
    )


async def _contains(ids: Any, broker_id: int) -> bool:
    return broker_id in await ids


async def test_supervisor_restarts_a_crashed_broker(
    process_cluster: Callable[..., Any], wait_for: Any
) -> None:
    cluster = await process_cluster(brokers=1, restart_on_crash=True, restart_backoff_s=0.1)
    first_pid = cluster.brokers[1].pid
    assert first_pid is not None
    os.kill(first_pid, signal.SIGKILL)
    await wait_for(
        lambda: cluster.brokers[1].pid != first_pid and cluster.brokers[1].running,
        timeout=30,
        message="a new broker process",
    )
    assert await live_broker_ids(cluster) == {1}


def up_two_broker_processes(tmp_path: Path) -> subprocess.Popen[str]:
    """``mirrorsim up --processes`` of one two-broker cluster, its output piped."""
    config = tmp_path / "mirrorsim.toml"
    config.write_text(
        f"""
[cluster.primary]
brokers = 2
port = 0
data_dir = "{tmp_path / "primary"}"
"""
    )
    command = [
        sys.executable,
        "-c",
        "from mirrorsim.cli.main import cli; cli()",
        "up",
        "--config",
        str(config),
        "--processes",
    ]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


async def test_up_processes_prints_ready_and_stops_on_sigterm(
    tmp_path: Path, free_port: Callable[[], int]
) -> None:
    proc = up_two_broker_processes(tmp_path)
    try:
        assert proc.stdout is not None
        ready = await asyncio.to_thread(proc.stdout.readline)
        assert ready.startswith("cluster primary ready bootstrap=127.0.0.1:")
        assert len(ready.split("=", 1)[1].split(",")) == 2
        proc.send_signal(signal.SIGTERM)
        out, err = await asyncio.to_thread(proc.communicate, timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert out.strip() == "all clusters stopped"


def child_pids(parent: int) -> set[int]:
    """Live processes whose parent is ``parent`` (from /proc)."""
    children = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == parent and fields[0] != "Z":
            children.add(int(stat.parent.name))
    return children


def running(pid: int) -> bool:
    """Exists and is not a zombie (an orphan's zombie may wait for a reaper)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def test_brokers_stop_when_their_supervisor_is_killed(tmp_path: Path, wait_for: Any) -> None:
    proc = up_two_broker_processes(tmp_path)
    brokers: set[int] = set()
    try:
        assert proc.stdout is not None
        ready = await asyncio.to_thread(proc.stdout.readline)
        assert ready.startswith("cluster primary ready"), proc.stderr
        brokers = child_pids(proc.pid)
        assert len(brokers) == 2
        proc.kill()
        proc.wait()
        await wait_for(
            lambda: not any(running(pid) for pid in brokers),
            timeout=60,
            message="the orphaned brokers to stop",
        )
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in brokers:
            if running(pid):
                os.kill(pid, signal.SIGKILL)
