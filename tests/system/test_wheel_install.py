"""A plain ``pip install`` of the wheel (no extras) gives a working product.

The wheel is built from a copy of the source tree and installed into a fresh venv (pip
reuses its cache of downloaded wheels); then the commands a new user runs first.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mirrorsim.cli.main import COMMANDS

ROOT = Path(__file__).resolve().parents[2]
NOT_SHIPPED = shutil.ignore_patterns(
    ".venv", ".git", "build", "*.egg-info", "tests", "__pycache__", ".*_cache"
)
POSTGRES_CONFIG = """\
[cluster.primary]
brokers = 1
data_dir = "./pg-data"
metadata_url = "postgresql+psycopg://user:secret@127.0.0.1:1/mirrorsim"
"""

pytestmark = [pytest.mark.slow, pytest.mark.system, pytest.mark.timeout(900)]


def _run(args: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )


def _checked(args: list[str], cwd: Path, timeout: float = 300) -> str:
    result = _run(args, cwd, timeout)
    assert result.returncode == 0, f"{args}: {result.stderr[-2000:]}"
    assert "Traceback" not in result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin folder of a fresh venv holding only the wheel and its dependencies."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    shutil.copytree(ROOT, source, ignore=NOT_SHIPPED)
    dist = work / "dist"
    _checked(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), "."], source
    )
    (wheel,) = dist.glob("mirrorsim-*.whl")
    venv = work / "venv"
    _checked([sys.executable, "-m", "venv", str(venv)], work)
    _checked([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)], work, 900)
    return venv / "bin"


def test_every_command_prints_its_help(installed: Path, tmp_path: Path) -> None:
    assert "Commands:" in _checked([str(installed / "mirrorsim"), "--help"], tmp_path)
    assert "--bootstrap-server" in _checked([str(installed / "kafka-mirrors"), "--help"], tmp_path)
    for command in COMMANDS:
        assert "Usage:" in _checked([str(installed / "mirrorsim"), command, "--help"], tmp_path)


def test_the_builtin_drills_are_shipped_and_one_passes(installed: Path, tmp_path: Path) -> None:
    listed = _checked([str(installed / "mirrorsim"), "drill", "list"], tmp_path)
    names = [line.split()[0] for line in listed.splitlines()]
    assert {"first-mirror", "demo", "disaster-failover"} <= set(names)
    out = _checked([str(installed / "mirrorsim"), "drill", "run", "first-mirror"], tmp_path)
    assert "drill first-mirror: PASSED" in out


def test_a_missing_optional_driver_is_one_line_with_its_install_command(
    installed: Path, tmp_path: Path
) -> None:
    config = tmp_path / "clusters.toml"
    config.write_text(POSTGRES_CONFIG)
    result = _run([str(installed / "mirrorsim"), "up", "--config", str(config)], tmp_path, 120)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1, result.stderr
    assert "pip install 'mirrorsim[postgres]'" in result.stderr
    assert "secret" not in result.stderr
