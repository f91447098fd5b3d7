"""The server-side assignors: complete, balanced, deterministic; `uniform` sticky."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mirrorsim.broker.group.assignors import range_assign, uniform_assign
from mirrorsim.broker.group.offset_store import TopicPartition

TOPICS = ("a", "b", "c")

members_st = st.lists(st.sampled_from([f"m{i}" for i in range(8)]), min_size=1, unique=True)
counts_st = st.fixed_dictionaries({t: st.integers(0, 12) for t in TOPICS})


def _all(counts: dict[str, int]) -> set[TopicPartition]:
    return {TopicPartition(t, p) for t, n in counts.items() for p in range(n)}


def _homogeneous(members: list[str]) -> dict[str, frozenset[str]]:
    return {m: frozenset(TOPICS) for m in members}


@given(members_st, counts_st)
def test_uniform_covers_every_partition_once_and_balances(
    members: list[str], counts: dict[str, int]
) -> None:
    assignment = uniform_assign(_homogeneous(members), counts, {})
    owned = [tp for parts in assignment.values() for tp in parts]
    assert len(owned) == len(set(owned))
    assert set(owned) == _all(counts)
    sizes = [len(parts) for parts in assignment.values()]
    assert max(sizes) - min(sizes) <= 1


@given(members_st, counts_st)
def test_uniform_is_deterministic_and_sticky_when_a_member_joins(
    members: list[str], counts: dict[str, int]
) -> None:
    before = uniform_assign(_homogeneous(members), counts, {})
    assert uniform_assign(_homogeneous(members), counts, {}) == before
    joined = [*members, "new"]
    after = uniform_assign(_homogeneous(joined), counts, before)
    moved = sum(len(before[m] - after[m]) for m in members)
    total = len(_all(counts))
    # only what the newcomer needs moves: its fair share, no more
    assert moved == len(after["new"]) <= -(-total // len(joined))


@given(members_st, counts_st)
def test_uniform_keeps_everything_of_survivors_when_a_member_leaves(
    members: list[str], counts: dict[str, int]
) -> None:
    before = uniform_assign(_homogeneous(members), counts, {})
    survivors = members[1:] or members
    after = uniform_assign(_homogeneous(survivors), counts, before)
    sizes = [len(after[m]) for m in survivors]
    assert max(sizes) - min(sizes) <= 1
    for member in survivors:
        kept = before[member] & after[member]
        # a survivor gives up partitions only if it held more than its new share
        assert len(kept) >= min(len(before[member]), min(sizes))


@settings(max_examples=200)
@given(
    st.dictionaries(
        st.sampled_from([f"m{i}" for i in range(6)]),
        st.frozensets(st.sampled_from(TOPICS), min_size=1),
        min_size=1,
    ),
    counts_st,
)
def test_uniform_heterogeneous_gives_only_subscribed_topics_and_covers_them(
    subscriptions: dict[str, frozenset[str]], counts: dict[str, int]
) -> None:
    assignment = uniform_assign(subscriptions, counts, {})
    subscribed = {t for topics in subscriptions.values() for t in topics}
    owned = [tp for parts in assignment.values() for tp in parts]
    assert len(owned) == len(set(owned))
    assert set(owned) == {tp for tp in _all(counts) if tp.topic in subscribed}
    for member, parts in assignment.items():
        assert all(tp.topic in subscriptions[member] for tp in parts)


@given(members_st, counts_st)
def test_range_gives_contiguous_ranges_in_member_order(
    members: list[str], counts: dict[str, int]
) -> None:
    assignment = range_assign(_homogeneous(members), counts, {})
    assert range_assign(_homogeneous(members), counts, {}) == assignment
    ordered = sorted(members)
    for topic, count in counts.items():
        flattened = [
            tp.partition for m in ordered for tp in sorted(assignment[m]) if tp.topic == topic
        ]
        assert flattened == list(range(count))
        sizes = [len([tp for tp in assignment[m] if tp.topic == topic]) for m in ordered]
        assert sizes == sorted(sizes, reverse=True)
        assert max(sizes) - min(sizes) <= 1


def test_range_co_partitions_topics_of_equal_size() -> None:
    assignment = range_assign(_homogeneous(["x", "y"]), {"a": 3, "b": 3, "c": 0}, {})
    assert assignment["x"] == {TopicPartition(t, p) for t in "ab" for p in (0, 1)}
    assert assignment["y"] == {TopicPartition("a", 2), TopicPartition("b", 2)}
