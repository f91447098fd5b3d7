"""The step kinds a scenario may use, each an ``async def step(ctx, **params)``.

The registry maps a kind to its function; a step's parameters are checked against the
function's signature when the scenario loads, and every parameter naming a cluster must
name one the scenario declares.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from mirrorsim.drills.chaos import invariants as chaos_invariants
from mirrorsim.drills.chaos import steps as chaos_steps
from mirrorsim.drills.context import DrillContext
from mirrorsim.drills.scenario import ScenarioError, Step
from mirrorsim.drills.steps import checks, clusters, consume, mirror, produce, topics

StepFunction = Callable[..., Awaitable[None]]
CLUSTER_PARAMS = ("cluster", "source", "destination")

STEPS: dict[str, StepFunction] = {
    **clusters.STEPS,
    **topics.STEPS,
    **produce.STEPS,
    **consume.STEPS,
    **mirror.STEPS,
    **checks.STEPS,
    **chaos_steps.STEPS,
    **chaos_invariants.STEPS,
}


def check_step(step: Step, cluster_names: set[str]) -> None:
    function = STEPS.get(step.kind)
    if function is None:
        raise ScenarioError(f"unknown step; known: {', '.join(sorted(STEPS))}")
    try:
        inspect.signature(function).bind(None, **step.params)
    except TypeError as exc:
        raise ScenarioError(str(exc)) from None
    for name in CLUSTER_PARAMS:
        value = step.params.get(name)
        if value is not None and value not in cluster_names:
            raise ScenarioError(f"{name} {value!r} is not a cluster of this scenario")


async def run_step(ctx: DrillContext, step: Step) -> Any:
    return await STEPS[step.kind](ctx, **step.params)
