"""A report folder is never a reason to delete what a user keeps: ``mirrorsim demo`` and
``drill run --report`` refuse a folder holding other files before they start, and replace
only an earlier report's own files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

MIRRORSIM = str(Path(sys.executable).parent / "mirrorsim")


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MIRRORSIM, *args], capture_output=True, text=True, timeout=300, cwd=cwd, check=False
    )


@pytest.mark.parametrize(
    "command", [("demo",), ("drill", "run", "first-mirror")], ids=["demo", "drill-run"]
)
def test_a_folder_with_a_users_files_is_refused_and_kept(
    command: tuple[str, ...], tmp_path: Path
) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me\n")
    (folder / "report.md").write_text("my own report\n")

    result = _run(*command, "--report", str(folder), cwd=tmp_path)

    assert result.returncode == 1
    assert result.stderr == (
        f"Error: {folder} is not empty and holds files no drill report writes (notes.txt); "
        "choose a new or empty folder\n"
    )
    assert (folder / "notes.txt").read_text() == "keep me\n"
    assert (folder / "report.md").read_text() == "my own report\n"


def test_an_earlier_report_is_replaced(tmp_path: Path) -> None:
    folder = tmp_path / "report"
    first = _run("drill", "run", "first-mirror", "--report", str(folder), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    written = sorted(p.name for p in folder.iterdir())
    (folder / "verification.json").write_text("{}\n")

    second = _run("drill", "run", "first-mirror", "--report", str(folder), cwd=tmp_path)

    assert second.returncode == 0, second.stderr
    assert sorted(p.name for p in folder.iterdir()) == written
    assert "drill first-mirror: PASSED" in second.stdout
