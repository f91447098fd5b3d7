"""``mirrorsim up`` through click's CliRunner: ready lines, then a clean stop on SIGTERM."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner

from mirrorsim.cli.cmd_up import up


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _terminate_when_listening(ports: list[int], timeout: float) -> threading.Thread:
    """Send SIGTERM to this process once every port accepts (or the timeout passes)."""

    def watch() -> None:
        deadline = time.monotonic() + timeout
        while not all(_accepts(p) for p in ports) and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGTERM)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_up_prints_ready_lines_and_stops_on_sigterm(
    tmp_path: Path, free_port: Callable[[], int]
) -> None:
    primary, backup = free_port(), free_port()
    config = tmp_path / "mirrorsim.toml"
    config.write_text(
        f"""
[cluster.primary]
brokers = 1
port = {primary}
data_dir = "{tmp_path / "primary"}"

[cluster.primary.config]
"num.partitions" = 2

[cluster.backup]
brokers = 1
port = {backup}
data_dir = "{tmp_path / "backup"}"
metadata_url = "sqlite:///{tmp_path / "backup.db"}"
"""
    )
    watcher = _terminate_when_listening([primary, backup], timeout=20)
    result = CliRunner().invoke(up, ["--config", str(config)])
    watcher.join()
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"cluster primary ready bootstrap=127.0.0.1:{primary}",
        f"cluster backup ready bootstrap=127.0.0.1:{backup}",
        "all clusters stopped",
    ]
    assert (tmp_path / "primary" / "metadata.db").exists()
    assert (tmp_path / "backup.db").exists()
    assert not _accepts(primary)


def test_up_reports_a_bad_config(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text('[cluster.primary]\nbrokers = "three"\n')
    result = CliRunner().invoke(up, ["--config", str(config)])
    assert result.exit_code == 1
    assert "cluster.primary.brokers must be a positive integer" in result.output
