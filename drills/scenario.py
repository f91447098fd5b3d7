"""Drill scenarios: the YAML an operator writes, parsed into plain frozen data.

A scenario names its clusters, lists its steps in order and ends with assertions over the
results the steps record. Each step is one mapping with a single key, the step's kind, so
a scenario reads like a runbook::

    - failover: {cluster: backup, mirror: my-mirror, topics: [orders]}

Parameters are checked against the step's signature when the scenario is loaded, so a
typo fails before any cluster starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml


class ScenarioError(ValueError):
    """The scenario file is not a valid drill; the message names the offending part."""


CLUSTER_MODES = ("in-process", "processes")


@dataclass(frozen=True, slots=True)
class ClusterDef:
    """``mode``: brokers in this process (abrupt in-process stops stand in for kills) or
    one OS process per broker (a kill is SIGKILL)."""

    name: str
    brokers: int = 1
    configs: Mapping[str, Any] = field(default_factory=dict)
    mode: str = "in-process"


@dataclass(frozen=True, slots=True)
class Step:
    kind: str
    params: Mapping[str, Any]

    @property
    def title(self) -> str:
        detail = ", ".join(f"{k}={v}" for k, v in self.params.items() if k != "records")
        return f"{self.kind} {detail}".strip()


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    description: str
    clusters: tuple[ClusterDef, ...]
    steps: tuple[Step, ...]
    assertions: tuple[str, ...]
    notes: str = ""
    slow: bool = False


def load_scenario(path: str | Path) -> Scenario:
    path = Path(path)
    try:
        document = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ScenarioError(f"{path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{path}: {_yaml_problem(exc)}") from None
    return parse_scenario(document, origin=str(path))


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """PyYAML's multi-line report as one line: the problem and where (1-based)."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        return f"{exc.problem} at line {mark.line + 1}, column {mark.column + 1}"
    return " ".join(str(exc).split())


def parse_scenario(document: Any, *, origin: str = "scenario") -> Scenario:
    from mirrorsim.drills.assertions import parse_assertion
    from mirrorsim.drills.steps import check_step

    if not isinstance(document, dict):
        raise ScenarioError(f"{origin}: a scenario is a mapping")
    unknown = set(document) - {
        "name",
        "description",
        "clusters",
        "steps",
        "assert",
        "notes",
        "slow",
    }
    if unknown:
        raise ScenarioError(f"{origin}: unknown key(s) {', '.join(sorted(unknown))}")
    for key in ("name", "description", "clusters", "steps"):
        if key not in document:
            raise ScenarioError(f"{origin}: missing '{key}'")
    clusters = tuple(_cluster(origin, c) for c in document["clusters"])
    names = [c.name for c in clusters]
    if len(set(names)) != len(names):
        raise ScenarioError(f"{origin}: cluster names must be unique")
    steps = []
    for index, raw in enumerate(document["steps"], start=1):
        if not isinstance(raw, dict) or len(raw) != 1:
            raise ScenarioError(f"{origin}: step {index} must be a mapping with one key")
        ((kind, params),) = raw.items()
        step = Step(kind, dict(params or {}))
        try:
            check_step(step, set(names))
        except ScenarioError as exc:
            raise ScenarioError(f"{origin}: step {index} ({kind}): {exc}") from None
        steps.append(step)
    assertions = tuple(str(a) for a in document.get("assert", []))
    for text in assertions:
        try:
            parse_assertion(text)
        except ScenarioError as exc:
            raise ScenarioError(f"{origin}: assertion {text!r}: {exc}") from None
    return Scenario(
        name=str(document["name"]),
        description=str(document["description"]).strip(),
        clusters=clusters,
        steps=tuple(steps),
        assertions=assertions,
        notes=str(document.get("notes", "")).strip(),
        slow=bool(document.get("slow", False)),
    )


def _cluster(origin: str, raw: Any) -> ClusterDef:
    if not isinstance(raw, dict) or "name" not in raw:
        raise ScenarioError(f"{origin}: each cluster needs a name")
    unknown = set(raw) - {"name", "brokers", "configs", "mode"}
    if unknown:
        raise ScenarioError(f"{origin}: cluster {raw['name']}: unknown key(s) {sorted(unknown)}")
    brokers = raw.get("brokers", 1)
    if not isinstance(brokers, int) or brokers < 1:
        raise ScenarioError(f"{origin}: cluster {raw['name']}: brokers must be >= 1")
    mode = raw.get("mode", "in-process")
    if mode not in CLUSTER_MODES:
        raise ScenarioError(
            f"{origin}: cluster {raw['name']}: mode must be one of {', '.join(CLUSTER_MODES)}"
        )
    return ClusterDef(str(raw["name"]), brokers, dict(raw.get("configs") or {}), mode)


def with_cluster_mode(scenario: Scenario, mode: str) -> Scenario:
    """``scenario`` with every cluster in ``mode``: the same drill against broker
    processes, where a kill is a real SIGKILL."""
    if mode not in CLUSTER_MODES:
        raise ScenarioError(f"mode must be one of {', '.join(CLUSTER_MODES)}")
    clusters = tuple(replace(c, mode=mode) for c in scenario.clusters)
    return replace(scenario, clusters=clusters)
