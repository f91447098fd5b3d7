"""Chaos schedules: seeded generation is deterministic and always a valid drill; ddmin
shrinks to a 1-minimal failing sub-sequence."""

from __future__ import annotations

import asyncio
from collections import Counter

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from mirrorsim.drills import parse_scenario
from mirrorsim.drills.chaos.explorer import (
    CLUSTER_CONFIGS,
    ISR_LAG_MS,
    Finding,
    ScheduleOutcome,
    replicated,
)
from mirrorsim.drills.chaos.journal import Violation
from mirrorsim.drills.chaos.report import replay_yaml
from mirrorsim.drills.chaos.schedule import (
    FREEZE_S,
    STALL_S,
    WEIGHTS,
    generate,
    scenario_document,
)
from mirrorsim.drills.chaos.shrink import ddmin

seeds = st.integers(min_value=0, max_value=2**32)
indexes = st.integers(min_value=0, max_value=10_000)
lengths = st.integers(min_value=1, max_value=30)


@given(seeds, indexes, lengths)
def test_the_same_seed_and_index_give_the_same_schedule(seed: int, index: int, steps: int) -> None:
    first = generate(seed, index, steps)
    assert first == generate(seed, index, steps)
    assert len(first.steps) == steps + 1
    assert first.steps[0].kind == "chaos_setup"
    assert {s.kind for s in first.steps[1:]} <= set(WEIGHTS)


@given(seeds, indexes, lengths)
@settings(max_examples=40)
def test_every_schedule_is_a_drill_that_loads(seed: int, index: int, steps: int) -> None:
    schedule = generate(seed, index, steps)
    scenario = parse_scenario(scenario_document(schedule, CLUSTER_CONFIGS, "note"))
    kinds = [s.kind for s in scenario.steps]
    assert kinds == ["start_clusters", *(s.kind for s in schedule.steps), "chaos_check"]
    assert scenario.assertions == ("chaos_violations == []",)


@given(seeds, indexes)
def test_renaming_keeps_the_steps_and_moves_every_name(seed: int, index: int) -> None:
    schedule = generate(seed, index, 10)
    renamed = schedule.renamed("fresh")
    assert [s.kind for s in renamed.steps] == [s.kind for s in schedule.steps]
    values = {v for s in renamed.steps for v in s.params.values()}
    assert schedule.topic not in values and schedule.mirror not in values
    assert renamed.topic in values and renamed.mirror in values


def test_seeds_explore_different_schedules() -> None:
    schedules = {tuple(s.kind for s in generate(1, i, 8).steps) for i in range(50)}
    assert len(schedules) > 40


@given(
    st.lists(st.integers(0, 50), min_size=1, max_size=40, unique=True),
    st.data(),
)
def test_ddmin_finds_a_one_minimal_failing_subsequence(
    items: list[int], data: st.DataObject
) -> None:
    needed = set(data.draw(st.lists(st.sampled_from(items), max_size=4, unique=True)))
    calls = 0

    async def fails(candidate: list[int]) -> bool:
        nonlocal calls
        calls += 1
        return needed <= set(candidate)

    smallest = asyncio.run(ddmin(items, fails, budget=10_000))
    assert set(smallest) == needed or (not needed and len(smallest) <= 1)
    assert smallest == [i for i in items if i in set(smallest)]  # order kept


def test_ddmin_respects_its_budget() -> None:
    calls = 0

    async def fails(candidate: list[int]) -> bool:
        nonlocal calls
        calls += 1
        return 7 in candidate and 31 in candidate

    asyncio.run(ddmin(list(range(64)), fails, budget=5))
    assert calls == 5


def test_broker_processes_are_frozen_past_their_session_or_stalled_within_it() -> None:
    """Half of the freezes fence the broker, half only stall it (with replicas, past
    ``replica.lag.time.max.ms``); a schedule in process never freezes."""
    lengths = Counter(
        step.params["seconds"]
        for i in range(300)
        for step in generate(7, i, 8, processes=True).steps
        if step.kind == "chaos_freeze"
    )
    assert set(lengths) == {FREEZE_S, STALL_S}
    assert min(lengths.values()) > sum(lengths.values()) / 4
    assert STALL_S * 1000 > ISR_LAG_MS
    assert FREEZE_S * 1000 > CLUSTER_CONFIGS["broker.session.timeout.ms"] > STALL_S * 1000
    assert not any(
        step.kind == "chaos_freeze" for i in range(300) for step in generate(7, i, 8).steps
    )


def test_the_stall_shrinks_isrs_only_among_broker_processes_with_replicas() -> None:
    assert "replica.lag.time.max.ms" not in replicated(1, processes=True)
    assert "replica.lag.time.max.ms" not in replicated(2)
    assert replicated(2, processes=True)["replica.lag.time.max.ms"] == ISR_LAG_MS


def test_a_replay_file_names_the_configs_the_schedule_ran_with() -> None:
    schedule = generate(3, 0, 4)
    outcome = ScheduleOutcome(schedule, [Violation("logs-equal", "differs")], [], 0, 0, 1.0)
    configs = {**CLUSTER_CONFIGS, **replicated(2)}
    document = yaml.safe_load(replay_yaml(Finding(outcome), "in-process", configs))
    assert all(c["configs"] == configs for c in document["clusters"])
    assert all(c["configs"]["default.replication.factor"] == 2 for c in document["clusters"])
