"""``mirrorsim up`` logs its in-process brokers as process brokers log: a timestamp, the
level and the broker on every line, from ``--log-level`` up (INFO shows the metrics URL)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

MIRRORSIM = str(Path(sys.executable).parent / "mirrorsim")
LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL) ")
CONFIG = """\
[cluster.primary]
brokers = 2
data_dir = "{data}"
"""


def _up_until_ready(tmp_path: Path, level: str) -> tuple[str, str]:
    """Start ``mirrorsim up``, interrupt it once its cluster is ready, return its output."""
    config = tmp_path / "clusters.toml"
    config.write_text(CONFIG.format(data=tmp_path / "primary"))
    process = subprocess.Popen(
        [MIRRORSIM, "up", "--config", str(config), "--log-level", level],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        assert process.stdout is not None
        ready = process.stdout.readline()
        assert ready.startswith("cluster primary ready"), ready
        process.send_signal(signal.SIGINT)
        rest, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, stderr
    return ready + rest, stderr


def test_info_lines_carry_time_level_and_broker(tmp_path: Path) -> None:
    stdout, stderr = _up_until_ready(tmp_path, "info")

    assert stdout.endswith("all clusters stopped\n")
    lines = stderr.splitlines()
    assert lines and all(LINE.match(line) for line in lines), stderr
    for broker in (1, 2):
        metrics = [
            line for line in lines if f" INFO broker={broker} " in line and "metrics on" in line
        ]
        assert len(metrics) == 1 and re.search(r"http://127\.0\.0\.1:\d+/metrics$", metrics[0])


@pytest.mark.parametrize("level", ["WARNING", "ERROR"])
def test_a_higher_level_hides_info(tmp_path: Path, level: str) -> None:
    _, stderr = _up_until_ready(tmp_path, level)

    assert " INFO " not in stderr
    assert all(LINE.match(line) for line in stderr.splitlines()), stderr
