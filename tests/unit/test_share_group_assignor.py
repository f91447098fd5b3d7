"""The share groups' `simple` assignor: every subscribed partition served, shared by
`ceil(subscribers / partitions)` members, balanced, sticky and deterministic, for any
subscriptions and any previous target (Hypothesis)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.broker.group.offset_store import TopicPartition
from mirrorsim.broker.group.share_assignor import simple_assign

TOPICS = ("a", "b", "c")


def _partitions(topic: str, count: int) -> frozenset[TopicPartition]:
    return frozenset(TopicPartition(topic, p) for p in range(count))


@st.composite
def _groups(
    draw: st.DrawFn,
) -> tuple[dict[str, frozenset[str]], dict[str, int], dict[str, frozenset[TopicPartition]]]:
    counts = {t: draw(st.integers(0, 6)) for t in TOPICS}
    members = draw(st.lists(st.sampled_from([f"m{i}" for i in range(10)]), unique=True))
    subscriptions = {
        m: frozenset(draw(st.sets(st.sampled_from(TOPICS), max_size=3))) for m in members
    }
    everything = sorted(TopicPartition(t, p) for t in TOPICS for p in range(7))
    current = {m: frozenset(draw(st.sets(st.sampled_from(everything)))) for m in members}
    return subscriptions, counts, current


@given(_groups())
def test_every_partition_is_shared_as_needed_and_no_move_would_narrow_a_gap(
    group: tuple[dict[str, frozenset[str]], dict[str, int], dict[str, frozenset[TopicPartition]]],
) -> None:
    subscriptions, counts, current = group
    assignment = simple_assign(subscriptions, counts, current)
    assert assignment == simple_assign(subscriptions, counts, current)
    assert set(assignment) == set(subscriptions)
    for member, partitions in assignment.items():
        assert all(tp.topic in subscriptions[member] for tp in partitions)
        assert all(tp.partition < counts[tp.topic] for tp in partitions)
    for topic in TOPICS:
        subscribers = [m for m in subscriptions if topic in subscriptions[m]]
        for tp in _partitions(topic, counts[topic]):
            holders = sum(tp in assignment[m] for m in subscribers)
            assert holders == (-(-len(subscribers) // counts[topic]) if subscribers else 0)
    for giver, given_ in assignment.items():
        for taker, taken in assignment.items():
            if len(given_) >= len(taken) + 2:
                movable = {tp for tp in given_ - taken if tp.topic in subscriptions[taker]}
                assert not movable, (giver, taker)


def test_a_join_moves_only_the_newcomers_share() -> None:
    subscriptions = {m: frozenset({"a"}) for m in ("m1", "m2", "m3")}
    before = simple_assign(subscriptions, {"a": 6}, {})
    assert sorted(len(p) for p in before.values()) == [2, 2, 2]
    after = simple_assign({**subscriptions, "m4": frozenset({"a"})}, {"a": 6}, before)
    assert sorted(len(p) for p in after.values()) == [1, 1, 2, 2]
    assert all(after[m] <= before[m] for m in subscriptions)  # nobody gains a partition
    assert sum(len(before[m] - after[m]) for m in subscriptions) == len(after["m4"])


def test_more_members_than_partitions_share_each_partition() -> None:
    subscriptions = {f"m{i}": frozenset({"a"}) for i in range(5)}
    assignment = simple_assign(subscriptions, {"a": 2}, {})
    assert all(len(p) >= 1 for p in assignment.values())  # nobody is left without work
    for tp in _partitions("a", 2):
        assert sum(tp in p for p in assignment.values()) == 3  # ceil(5 / 2)


def test_members_get_only_their_own_topics() -> None:
    subscriptions = {"m1": frozenset({"a"}), "m2": frozenset({"a", "b"}), "m3": frozenset({"b"})}
    assignment = simple_assign(subscriptions, {"a": 3, "b": 1}, {})
    assert assignment["m1"] | assignment["m2"] >= _partitions("a", 3)
    assert _partitions("b", 1) <= assignment["m2"] & assignment["m3"]  # 2 subscribers, 1 partition
