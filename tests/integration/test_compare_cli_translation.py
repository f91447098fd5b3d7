"""``mirrorsim compare --translation timestamp``: the installed script on real in-process
clusters, the MM2 run committing group offsets by timestamp, both re-read counts reported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent


def test_timestamp_translation_is_reported_beside_offset_sync(tmp_path: Path) -> None:
    argv = ["--records", "600", "--partitions", "1", "--translation", "timestamp"]
    run = subprocess.run(
        [str(BIN / "mirrorsim"), "compare", *argv, "--report", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stderr

    # Source offsets 100..599 land at target 0..499; the group committed source 377, whose
    # record lands at target 277. Offset syncs at 100, 201, 302, 403, 504 (and 599 at the
    # offset commit) translate 377 through 302 -> 202 to 203 (74 re-read). Records share
    # a timestamp ten at a time (370..379), so the earliest target record with 377's
    # timestamp is 270 (7 re-read).
    document = json.loads((tmp_path / "comparison.json").read_text())
    assert document["settings"]["offset_translation"] == "timestamp"
    mm2 = next(m for m in document["modes"] if m["mode"] == "MM2-style")
    assert [(p["expected_target_offset"], p["resume_offset"]) for p in mm2["partitions"]] == [
        (277, 270)
    ]
    assert mm2["reprocessed"] == 7
    assert [
        (t["method"], t["resume_offsets"], t["reprocessed"], t["skipped"], t["committed"])
        for t in mm2["translations"]
    ] == [("offset-sync", [203], 74, 0, False), ("timestamp", [270], 7, 0, True)]

    markdown = (tmp_path / "comparison.md").read_text()
    assert "| offset-sync | 203 (277) | 74 | 0 | no |" in markdown.splitlines()
    assert "| timestamp | 270 (277) | 7 | 0 | yes |" in markdown.splitlines()
    assert run.stdout.startswith(markdown)
