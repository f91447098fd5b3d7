"""The drill report: ``report.json`` (everything measured), ``report.md`` (the summary an
operator reads), ``timeline.png`` and, when the drill verified, ``verification.json``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mirrorsim.drills.context import Event
from mirrorsim.drills.sampler import Sample

if TYPE_CHECKING:
    from mirrorsim.drills.runner import DrillResult

HEADLINES = (
    ("rpo_records", "RPO (records acknowledged on the source, missing on the destination)"),
    ("rpo_seconds", "RPO (seconds)"),
    ("rto_seconds", "RTO (failover command to first accepted produce, seconds)"),
    ("records_lost", "records lost at the end"),
    ("failback_bytes", "bytes copied on failback"),
    ("full_log_bytes", "full log bytes (failback source)"),
)


REPORT_FILES = frozenset({"report.json", "report.md", "timeline.png", "verification.json"})
"""Every file a report may hold: a folder with anything else is not a drill report."""


class ReportDirError(Exception):
    """The report folder holds something a drill report did not write."""


def claim_report_dir(directory: Path) -> None:
    """Make ``directory`` ready for a new report without deleting anything a user owns:
    a missing or empty folder is used as is, an earlier report's files are removed, and
    a folder holding anything else (or a file of that name) raises ``ReportDirError``."""
    if not directory.exists():
        return
    if not directory.is_dir():
        raise ReportDirError(f"{directory} exists and is not a directory")
    foreign = sorted(p.name for p in directory.iterdir() if p.name not in REPORT_FILES)
    if foreign:
        raise ReportDirError(
            f"{directory} is not empty and holds files no drill report writes "
            f"({', '.join(foreign[:3])}{', ...' if len(foreign) > 3 else ''}); "
            "choose a new or empty folder"
        )
    for name in REPORT_FILES:
        (directory / name).unlink(missing_ok=True)


def public_results(results: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in results.items() if not k.startswith("_")}


def write_report(
    result: DrillResult, events: Sequence[Event], samples: Sequence[Sample], directory: Path
) -> dict[str, Path]:
    from mirrorsim.drills.charts import timeline_chart

    directory.mkdir(parents=True, exist_ok=True)
    files = {
        "timeline": timeline_chart(
            samples, events, directory / "timeline.png", f"drill {result.scenario.name}"
        )
    }
    verification = result.results.get("_verification_report")
    if verification is not None:
        files["verification"] = directory / "verification.json"
        files["verification"].write_text(json.dumps(verification, indent=2, default=str) + "\n")
    document = {
        "drill": result.scenario.name,
        "description": result.scenario.description,
        "passed": result.passed,
        "error": result.error,
        "results": public_results(result.results),
        "assertions": [o.to_dict() for o in result.outcomes],
        "events": [{"time": round(e.time, 3), "kind": e.kind, "detail": e.detail} for e in events],
        "timeline": [s.to_dict() for s in samples],
    }
    files["json"] = directory / "report.json"
    files["json"].write_text(json.dumps(document, indent=2, default=str) + "\n")
    files["markdown"] = directory / "report.md"
    files["markdown"].write_text(markdown(result, events))
    return files


def markdown(result: DrillResult, events: Sequence[Event]) -> str:
    results = result.results
    lines = [
        f"# Drill `{result.scenario.name}`: {'PASSED' if result.passed else 'FAILED'}",
        "",
        result.scenario.description,
        "",
    ]
    if result.scenario.notes:
        lines += [result.scenario.notes, ""]
    lines += ["| measure | value |", "|---|---|"]
    for key, label in HEADLINES:
        if key in results:
            lines.append(f"| {label} | {results[key]} |")
    for group, count in sorted(results.get("duplicates", {}).items()):
        lines.append(f"| duplicates seen by consumer group `{group}` | {count} |")
    for name, count in sorted(results.get("reprocessed", {}).items()):
        lines.append(
            f"| re-processed after failover by `{name}` | {count} (bound "
            f"{results['reprocess_bound'][name]}: done after the last possible sync or in "
            f"flight; {results['in_flight'][name]} in flight at the move) |"
        )
    verification = results.get("verification")
    if verification is not None:
        verdict = "converged" if verification["converged"] else "NOT converged"
        lines.append(
            f"| Spark verification | {verdict} ({verification['unexpected_divergences']} "
            f"unexpected, {verification['expected_divergences']} expected divergences) |"
        )
    for key in ("stop_offsets", "last_mirrored_epoch", "failback_truncation"):
        for tp, value in sorted(results.get(key, {}).items()):
            lines.append(f"| {key.replace('_', ' ')} `{tp}` | {value} |")
    lines += [
        "",
        "![timeline](timeline.png)",
        "",
        "## Checks",
        "",
        "| check | result |",
        "|---|---|",
    ]
    for outcome in result.outcomes:
        found = "" if outcome.passed else f" (left: {outcome.left!r}, right: {outcome.right!r})"
        lines.append(f"| `{outcome.text}` | {'pass' if outcome.passed else 'FAIL'}{found} |")
    if result.error:
        lines += ["", "## Error", "", "```", result.error.strip(), "```"]
    lines += ["", "## Events", "", "| t (s) | event | detail |", "|---|---|---|"]
    lines += [f"| {e.time:.2f} | {e.kind} | {e.detail} |" for e in events]
    return "\n".join(lines) + "\n"
