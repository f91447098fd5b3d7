"""The comparison report: one JSON document, a Markdown table and (if matplotlib is
installed) a bar chart of re-read records and failback bytes per mode."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from mirrorsim.compare.outcome import ModeOutcome
from mirrorsim.compare.scenario import ComparisonSettings


def report_document(
    settings: ComparisonSettings, outcomes: Sequence[ModeOutcome], command: str
) -> dict[str, Any]:
    return {
        "command": command,
        "settings": asdict(settings),
        "modes": [
            {
                **asdict(o),
                "reprocessed": o.reprocessed,
                "skipped": o.skipped,
            }
            for o in outcomes
        ],
    }


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def render_markdown(document: dict[str, Any]) -> str:
    w = document["settings"]["workload"]
    lines = [
        "# Cluster mirroring vs MM2-style vs legacy MirrorMaker",
        "",
        f"Command: `{document['command']}`",
        "",
        f"Workload: topic `{w['topic']}`, {w['partitions']} partition(s) x "
        f"{w['records_per_partition']} keyed lz4 records ({w['records_per_batch']} per batch), "
        f"first {w['trimmed_batches']} batch(es) deleted, group `{w['group']}` committed "
        f"{w['consumed_per_partition']} records past the log start, "
        f"{w['records_per_timestamp']} records per timestamp; MM2 offset.lag.max="
        f"{document['settings']['offset_lag_max']}, group offsets translated by "
        f"{document['settings']['offset_translation']}.",
        "",
        "| mode | target topic | offsets preserved | name preserved | topic id preserved "
        "| resume offsets (expected) | re-read | skipped | missing | failback bytes "
        "| recompression CPU s | copy s | failover s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for m in document["modes"]:
        resume = ", ".join(
            f"{p['resume_offset']} ({p['expected_target_offset']})" for p in m["partitions"]
        )
        lines.append(
            f"| {m['mode']} | `{m['target_topic']}` | {_yes(m['offsets_preserved'])} "
            f"| {_yes(m['topic_name_preserved'])} | {_yes(m['topic_id_preserved'])} "
            f"| {resume} | {m['reprocessed']} | {m['skipped']} | {m['missing_records']} "
            f"| {m['failback_bytes']} "
            f"| {m['recompression_cpu_seconds']:.4f} | {m['replicate_seconds']:.2f} "
            f"| {m['failover_seconds']:.2f} |"
        )
    lines += _translation_lines(document)
    lines += ["", "Failback bytes:"]
    lines += [f"- {m['mode']}: {m['failback_basis']}" for m in document["modes"]]
    return "\n".join(lines) + "\n"


def _translation_lines(document: dict[str, Any]) -> list[str]:
    """Each group offset translation a mode computed, side by side."""
    lines: list[str] = []
    for m in document["modes"]:
        if not m["translations"]:
            continue
        expected = [p["expected_target_offset"] for p in m["partitions"]]
        lines += [
            "",
            f"{m['mode']} group offset translation:",
            "",
            "| translation | resume offsets (expected) | re-read | skipped | committed |",
            "|---|---|---|---|---|",
        ]
        for t in m["translations"]:
            resume = ", ".join(
                f"{r} ({e})" for r, e in zip(t["resume_offsets"], expected, strict=True)
            )
            lines.append(
                f"| {t['method']} | {resume} | {t['reprocessed']} | {t['skipped']} "
                f"| {_yes(t['committed'])} |"
            )
    return lines


def write_report(document: dict[str, Any], directory: Path) -> list[Path]:
    """Write comparison.json, comparison.md and, when matplotlib is there, comparison.png."""
    directory.mkdir(parents=True, exist_ok=True)
    written = [directory / "comparison.json", directory / "comparison.md"]
    written[0].write_text(json.dumps(document, indent=2, default=str) + "\n")
    written[1].write_text(render_markdown(document))
    chart = _write_chart(document, directory / "comparison.png")
    return [*written, *([chart] if chart else [])]


def _write_chart(document: dict[str, Any], path: Path) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError:
        return None
    modes = [m["mode"] for m in document["modes"]]
    figure, (reread, failback) = pyplot.subplots(1, 2, figsize=(10, 4))
    reread.bar(modes, [m["reprocessed"] for m in document["modes"]])
    reread.set_title("records re-read after failover")
    failback.bar(modes, [m["failback_bytes"] for m in document["modes"]])
    failback.set_title("bytes re-sent on failback")
    for axis in (reread, failback):
        axis.tick_params(axis="x", labelrotation=15)
    figure.tight_layout()
    figure.savefig(path)
    pyplot.close(figure)
    return path
