"""Failover and failback drills: YAML scenarios run against in-process clusters with
real Kafka clients, measured (RPO, RTO, duplicates, failback bytes), verified with Spark
and reported as Markdown, JSON and a timeline chart."""

from mirrorsim.drills.catalog import builtin_scenarios, resolve
from mirrorsim.drills.runner import DrillResult, run_drill
from mirrorsim.drills.scenario import Scenario, ScenarioError, load_scenario, parse_scenario

__all__ = [
    "DrillResult",
    "Scenario",
    "ScenarioError",
    "builtin_scenarios",
    "load_scenario",
    "parse_scenario",
    "resolve",
    "run_drill",
]
