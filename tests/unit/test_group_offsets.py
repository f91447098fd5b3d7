"""The offset rules of ``mirrorsim groups``: which partitions a describe lists with what
lag, and where each reset scenario lands (always inside the log, as Kafka clamps it)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.cli.group_offsets import (
    LagRow,
    ResetTarget,
    lag_rows,
    parse_datetime,
    plan_reset,
)
from mirrorsim.client.admin_types import TopicPartition

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def test_committed_and_assigned_partitions_are_listed_with_their_lag() -> None:
    rows = lag_rows({A1: 7, B0: 3}, {A0: 10, A1: 9, B0: 3}, {A0: "m-1", A1: "m-1"})
    assert rows == [
        LagRow(A0, None, 10, "m-1"),
        LagRow(A1, 7, 9, "m-1"),
        LagRow(B0, 3, 3, None),
    ]
    assert [row.lag for row in rows] == [None, 2, 0]


def test_each_scenario_lands_where_kafka_puts_it() -> None:
    parts = [A0, A1]
    committed = {A0: 5}
    earliest = {A0: 2, A1: 0}
    latest = {A0: 10, A1: 4}

    def plan(target: ResetTarget, by_time: dict[TopicPartition, int] | None = None) -> list[int]:
        return list(plan_reset(target, parts, committed, earliest, latest, by_time).values())

    assert plan(ResetTarget("earliest")) == [2, 0]
    assert plan(ResetTarget("latest")) == [10, 4]
    assert plan(ResetTarget("offset", 3)) == [3, 3]
    assert plan(ResetTarget("offset", 99)) == [10, 4]
    assert plan(ResetTarget("shift", -4)) == [2, 0]
    assert plan(ResetTarget("shift", 2)) == [7, 4]
    assert plan(ResetTarget("datetime", 1), {A0: 6, A1: -1}) == [6, 4]


@given(
    kind=st.sampled_from(["earliest", "latest", "offset", "shift", "datetime"]),
    value=st.integers(-1000, 1000),
    low=st.integers(0, 100),
    span=st.integers(0, 100),
    committed=st.one_of(st.none(), st.integers(0, 300)),
    found=st.integers(-1, 300),
)
def test_a_planned_offset_is_always_inside_the_log(
    kind: str, value: int, low: int, span: int, committed: int | None, found: int
) -> None:
    plan = plan_reset(
        ResetTarget(kind, value),
        [A0],
        {} if committed is None else {A0: committed},
        {A0: low},
        {A0: low + span},
        {A0: found},
    )
    assert low <= plan[A0] <= low + span


def test_a_datetime_without_a_zone_is_utc_and_bad_text_is_refused() -> None:
    assert parse_datetime("1970-01-01T00:00:01.500") == 1500
    assert parse_datetime("1970-01-01T01:00:00+01:00") == 0
    with pytest.raises(ValueError, match="Error parsing timestamp 'yesterday'"):
        parse_datetime("yesterday")
