"""The built-in drills: the YAML files shipped in ``drills/scenarios``."""

from __future__ import annotations

from pathlib import Path

from mirrorsim.drills.scenario import Scenario, load_scenario

SCENARIO_DIR = Path(__file__).parent / "scenarios"


def builtin_paths() -> dict[str, Path]:
    """By drill name (a path sort would put ``a-b.yaml`` before ``a.yaml``)."""
    paths = sorted(SCENARIO_DIR.glob("*.yaml"), key=lambda path: path.stem)
    return {path.stem: path for path in paths}


def builtin_scenarios() -> list[Scenario]:
    return [load_scenario(path) for path in builtin_paths().values()]


def resolve(name_or_file: str) -> Scenario:
    """A built-in drill by name, or a scenario file by path."""
    path = builtin_paths().get(name_or_file)
    return load_scenario(path if path is not None else Path(name_or_file))
