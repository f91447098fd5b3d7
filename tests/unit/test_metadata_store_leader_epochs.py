"""MetadataStore.raise_leader_epochs: one transaction raising many partitions' epochs."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mirrorsim.broker.metadata.models import PartitionAssignment, TopicRecord, UnknownTopicError
from mirrorsim.broker.metadata.store import MetadataStore

TOPIC = "orders"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MetadataStore]:
    opened = MetadataStore.open(f"sqlite:///{tmp_path / 'metadata.db'}")
    yield opened
    opened.close()


def _create(store: MetadataStore, epochs: list[int]) -> None:
    store.create_topic(
        TopicRecord(
            TOPIC,
            uuid.uuid4(),
            partitions=tuple(
                PartitionAssignment(p, (1, 2), 1 + p % 2, epoch, (1, 2))
                for p, epoch in enumerate(epochs)
            ),
        )
    )


def test_raises_only_what_is_below_its_minimum_and_nothing_else(store: MetadataStore) -> None:
    _create(store, [0, 7, 3, 2])
    before = store.topics([TOPIC])[TOPIC].partitions
    raised = store.raise_leader_epochs(TOPIC, {0: 5, 1: 5, 2: 4})
    after = store.topics([TOPIC])[TOPIC].partitions
    assert raised == [0, 2]
    assert [a.leader_epoch for a in after] == [5, 7, 4, 2]
    assert [(a.replicas, a.leader, a.isr) for a in after] == [
        (b.replicas, b.leader, b.isr) for b in before
    ]


def test_an_unknown_partition_changes_nothing(store: MetadataStore) -> None:
    _create(store, [0, 0])
    with pytest.raises(UnknownTopicError):
        store.raise_leader_epochs(TOPIC, {0: 3, 5: 3})
    with pytest.raises(UnknownTopicError):
        store.raise_leader_epochs("missing", {0: 3})
    assert [a.leader_epoch for a in store.topics([TOPIC])[TOPIC].partitions] == [0, 0]


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.integers(0, 50), min_size=1, max_size=12),
    st.lists(st.integers(0, 60), min_size=1, max_size=12),
)
def test_every_epoch_ends_at_the_larger_of_before_and_minimum(
    tmp_path_factory: pytest.TempPathFactory, epochs: list[int], minimums: list[int]
) -> None:
    directory = tmp_path_factory.mktemp("store")
    store = MetadataStore.open(f"sqlite:///{directory / 'metadata.db'}")
    try:
        _create(store, epochs)
        wanted = {p: m for p, m in enumerate(minimums[: len(epochs)])}
        raised = store.raise_leader_epochs(TOPIC, wanted)
        after = [a.leader_epoch for a in store.topics([TOPIC])[TOPIC].partitions]
        assert after == [max(e, wanted.get(p, e)) for p, e in enumerate(epochs)]
        assert raised == sorted(p for p, m in wanted.items() if epochs[p] < m)
    finally:
        store.close()
