"""`mirrorsim demo`: the README's main command, end to end (Spark included)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mirrorsim.cli.main import cli


@pytest.mark.slow
@pytest.mark.spark
def test_demo_writes_a_passing_report(tmp_path: Path) -> None:
    report_dir = tmp_path / "report"
    result = CliRunner().invoke(cli, ["demo", "--report", str(report_dir)])
    assert result.exit_code == 0, result.output
    assert "drill demo: PASSED" in result.output
    assert (report_dir / "timeline.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = json.loads((report_dir / "report.json").read_text())
    assert report["passed"] is True
    assert report["results"]["verification"]["converged"] is True
    assert json.loads((report_dir / "verification.json").read_text())["converged"] is True
    assert "![timeline](timeline.png)" in (report_dir / "report.md").read_text()
