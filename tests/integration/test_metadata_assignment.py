"""Replica placement, manual assignment checks and the snapshot diff (pure functions)."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.broker.metadata.assignment import assign_replicas, validate_manual_assignment
from mirrorsim.broker.metadata.models import PartitionAssignment, TopicRecord
from mirrorsim.broker.metadata.view import partition_changes
from mirrorsim.protocol.errors import ErrorCode, KafkaError


@given(
    brokers=st.lists(st.integers(0, 100), min_size=1, max_size=8, unique=True),
    partitions=st.integers(1, 40),
    data=st.data(),
)
def test_assignment_has_distinct_replicas_and_balanced_leaders(
    brokers: list[int], partitions: int, data: st.DataObject
) -> None:
    rf = data.draw(st.integers(1, len(brokers)))
    start = data.draw(st.integers(0, len(brokers) - 1))
    assignment = assign_replicas(brokers, partitions, rf, start_index=start)
    assert sorted(assignment) == list(range(partitions))
    for replicas in assignment.values():
        assert len(replicas) == rf == len(set(replicas))
        assert set(replicas) <= set(brokers)
    leaders = Counter(r[0] for r in assignment.values())
    assert max(leaders.values()) - min(leaders.get(b, 0) for b in brokers) <= 1


def test_replication_factor_above_broker_count_is_refused() -> None:
    with pytest.raises(KafkaError) as raised:
        assign_replicas([1, 2], 1, 3)
    assert raised.value.code == ErrorCode.INVALID_REPLICATION_FACTOR


@pytest.mark.parametrize(
    "assignment",
    [{0: [1], 2: [1]}, {0: [1, 1]}, {0: [9]}, {0: [1], 1: [1, 2]}, {0: []}],
)
def test_bad_manual_assignments(assignment: dict[int, list[int]]) -> None:
    with pytest.raises(KafkaError) as raised:
        validate_manual_assignment(assignment, [1, 2])
    assert raised.value.code == ErrorCode.INVALID_REPLICA_ASSIGNMENT


def _record(
    name: str, topic_id: uuid.UUID, epochs: list[int], configs: dict | None = None
) -> TopicRecord:
    return TopicRecord(
        name,
        topic_id,
        configs or {},
        tuple(PartitionAssignment(p, (1,), 1, e, (1,)) for p, e in enumerate(epochs)),
    )


def test_partition_changes() -> None:
    a, b, c = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    old = {
        "kept": _record("kept", a, [0, 0]),
        "gone": _record("gone", b, [0]),
        "recreated": _record("recreated", c, [3]),
    }
    new = {
        "kept": _record("kept", a, [0, 1]),
        "recreated": _record("recreated", uuid.uuid4(), [0]),
        "fresh": _record("fresh", uuid.uuid4(), [0]),
    }
    changed, removed = partition_changes(old, new)
    assert sorted(removed) == [("gone", 0), ("recreated", 0)]
    assert sorted((s.topic, s.partition, s.leader_epoch) for s in changed) == [
        ("fresh", 0, 0),
        ("kept", 1, 1),
        ("recreated", 0, 0),
    ]
    configs_only = {"kept": _record("kept", a, [0, 1], {"retention.ms": "1"})}
    changed, removed = partition_changes(new, configs_only)
    assert {(s.topic, s.partition) for s in changed} == {("kept", 0), ("kept", 1)}
    assert all(s.configs == {"retention.ms": "1"} for s in changed)
    assert partition_changes(new, new) == ([], [])
