"""The exploration's report: ``report.md``, ``report.json`` and, per violating schedule,
a drill YAML that replays it (the shrunk form when there is one)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from mirrorsim.drills.chaos.explorer import CLUSTER_CONFIGS, Exploration, Finding
from mirrorsim.drills.chaos.schedule import Schedule, scenario_document


def summary(result: Exploration) -> dict[str, Any]:
    return {
        "seed": result.seed,
        "mode": result.mode,
        "schedules": len(result.outcomes),
        "steps": result.steps,
        "faults_injected": result.faults,
        "violations": result.violations,
        "errors": result.errors,
        "seconds": round(result.seconds, 1),
        "schedules_per_minute": round(result.per_minute, 1),
    }


def write_report(result: Exploration, directory: Path) -> dict[str, Path]:
    """Write into ``directory`` (created if missing; nothing in it is deleted)."""
    directory.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    findings = []
    for number, finding in enumerate(result.findings, start=1):
        path = directory / f"violation-{number}.yaml"
        path.write_text(replay_yaml(finding, result.mode, result.configs))
        files[path.name] = path
        findings.append(_finding_json(finding, path.name))
    document = {**summary(result), "findings": findings, "errors_seen": _errors(result)}
    files["report.json"] = directory / "report.json"
    files["report.json"].write_text(json.dumps(document, indent=2))
    files["report.md"] = directory / "report.md"
    files["report.md"].write_text(_markdown(result, findings))
    return files


def replay_yaml(
    finding: Finding, mode: str = "in-process", configs: Mapping[str, object] = CLUSTER_CONFIGS
) -> str:
    """The schedule as a drill file, with the clusters' configs as explored."""
    schedule = finding.shrunk or finding.outcome.schedule
    invariants = ", ".join(finding.outcome.invariants)
    form = "shrunk" if finding.shrunk else "as explored"
    note = (
        f"Violated {invariants} ({form}, {len(schedule.steps)} steps). Replay with "
        f"`mirrorsim drill run FILE`; the seed regenerates the original schedule."
    )
    document = scenario_document(schedule, configs, note, mode)
    return yaml.safe_dump(document, sort_keys=False)


def _finding_json(finding: Finding, file: str) -> dict[str, Any]:
    outcome = finding.outcome
    return {
        "schedule": outcome.schedule.index,
        "invariants": outcome.invariants,
        "details": sorted({f"{v.invariant}: {v.detail}" for v in outcome.violations}),
        "steps": len(outcome.schedule.steps),
        "shrunk_steps": len(finding.shrunk.steps) if finding.shrunk else None,
        "shrink_runs": finding.shrink_runs,
        "shrunk": _kinds(finding.shrunk) if finding.shrunk else None,
        "divergence": [vars_of(d) for d in outcome.divergence],
        "replay": file,
    }


def vars_of(item: Any) -> dict[str, Any]:
    return {name: getattr(item, name) for name in item.__slots__}


def _kinds(schedule: Schedule) -> list[str]:
    return [
        f"{s.kind.removeprefix('chaos_')}({s.params.get('cluster', '')})".replace("()", "")
        for s in schedule.steps
    ]


def _errors(result: Exploration) -> list[dict[str, Any]]:
    return [
        {"schedule": o.schedule.index, "error": (o.error or "").splitlines()[0]}
        for o in result.outcomes
        if o.error
    ]


def _markdown(result: Exploration, findings: list[dict[str, Any]]) -> str:
    facts = summary(result)
    lines = [
        f"# mirrorsim chaos: seed {result.seed}",
        "",
        f"**{'NO VIOLATION' if not result.violations else 'VIOLATIONS FOUND'}**",
        "",
        "| measure | value |",
        "|---|---|",
        *(f"| {key.replace('_', ' ')} | {value} |" for key, value in facts.items()),
        "",
    ]
    divergent = [o for o in result.outcomes if o.divergence]
    if divergent:
        lines += ["## Expected divergence (documented discards)", ""]
        for outcome in divergent:
            for d in outcome.divergence:
                lines.append(
                    f"- schedule {outcome.schedule.index}: {d.cluster}/{d.topic}-{d.partition} "
                    f"{d.count} record(s) from offset {d.offset}"
                )
        lines.append("")
    if findings:
        lines += ["## Violations", ""]
    for finding in findings:
        shrunk = (
            f"shrunk to {finding['shrunk_steps']} steps in {finding['shrink_runs']} runs: "
            + " → ".join(finding["shrunk"])
            if finding["shrunk"]
            else "not shrunk"
        )
        lines += [
            f"### schedule {finding['schedule']}: {', '.join(finding['invariants'])}",
            "",
            f"{finding['steps']} steps; {shrunk}. Replay: `mirrorsim drill run "
            f"{finding['replay']}`.",
            "",
            *(f"- {detail}" for detail in finding["details"]),
            "",
        ]
    return "\n".join(lines)
