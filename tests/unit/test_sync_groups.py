"""Group offset sync rules: include filter, mirror topics only, monotonic, active, conflicts,
share groups' start offsets and unread views."""

from __future__ import annotations

from collections.abc import Iterable

from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.broker.group.offset_store import TopicPartition as CoordinatorPartition
from mirrorsim.coordinator.sync import (
    CommitGroupOffsets,
    GroupConflict,
    GroupSyncPlan,
    GroupType,
    GroupView,
    MirrorTopic,
    MirrorTopicStatus,
    TopicPartition,
    diff_groups,
    groups_include,
)

CONSUMER = GroupType.CONSUMER
SHARE = GroupType.SHARE
MIRROR = [MirrorTopic("orders"), MirrorTopic("paused", MirrorTopicStatus.PAUSED)]
O0, O1 = TopicPartition("orders", 0), TopicPartition("orders", 1)


def diff(
    source: Iterable[GroupView], destination: Iterable[GroupView] = (), include: str = ".*"
) -> GroupSyncPlan:
    return diff_groups(source, destination, MIRROR, groups_include(include))


def test_new_group_gets_its_source_offsets() -> None:
    plan = diff([GroupView("app", CONSUMER, {O0: 10, O1: 20})])
    assert plan == GroupSyncPlan(commits=(CommitGroupOffsets("app", CONSUMER, {O0: 10, O1: 20}),))


def test_plain_tuple_keys_are_accepted() -> None:
    plan = diff([GroupView("app", CONSUMER, {("orders", 0): 10})])
    assert plan.commits[0].offsets == {O0: 10}
    assert next(iter(plan.commits[0].offsets)).topic == "orders"


def test_equal_offsets_produce_nothing() -> None:
    group = GroupView("app", CONSUMER, {O0: 10})
    assert diff([group], [group]) == GroupSyncPlan()


def test_groups_never_move_backwards() -> None:
    source = GroupView("app", CONSUMER, {O0: 5, O1: 30})
    destination = GroupView("app", CONSUMER, {O0: 9, O1: 20})
    assert diff([source], [destination]).commits == (CommitGroupOffsets("app", CONSUMER, {O1: 30}),)
    assert diff([GroupView("app", CONSUMER, {O0: 5})], [destination]) == GroupSyncPlan()


def test_commit_beyond_the_destination_log_end_offset_is_allowed() -> None:
    # The diff has no notion of the destination log end offset: 100 is committed even if
    # only 80 records were mirrored so far.
    assert diff([GroupView("app", CONSUMER, {O0: 100})]).commits[0].offsets == {O0: 100}


def test_only_partitions_of_mirroring_topics_are_synced() -> None:
    offsets = {O0: 1, TopicPartition("paused", 0): 2, TopicPartition("local", 0): 3}
    assert diff([GroupView("app", CONSUMER, offsets)]).commits[0].offsets == {O0: 1}
    assert diff([GroupView("app", CONSUMER, {TopicPartition("local", 0): 3})]) == GroupSyncPlan()


def test_missing_offsets_are_not_committed() -> None:
    assert diff([GroupView("app", CONSUMER, {O0: -1})]) == GroupSyncPlan()


def test_groups_active_on_the_destination_are_skipped() -> None:
    active = GroupView("app", CONSUMER, {O0: 1}, has_active_members=True)
    other = GroupView("batch", CONSUMER, {O0: 7})
    plan = diff([GroupView("app", CONSUMER, {O0: 10}), other], [active])
    assert plan.skipped_active == ("app",)
    assert plan.commits == (CommitGroupOffsets("batch", CONSUMER, {O0: 7}),)


def test_active_group_already_in_sync_is_not_reported() -> None:
    active = GroupView("app", CONSUMER, {O0: 10}, has_active_members=True)
    assert diff([GroupView("app", CONSUMER, {O0: 10})], [active]) == GroupSyncPlan()


def test_share_group_with_a_consumer_group_name_is_a_conflict_others_continue() -> None:
    plan = diff(
        [GroupView("jobs", SHARE, {O0: 4}), GroupView("app", CONSUMER, {O0: 1})],
        [GroupView("jobs", GroupType.CLASSIC, {O0: 2})],
    )
    assert plan.conflicts == (GroupConflict("jobs", SHARE, GroupType.CLASSIC),)
    assert plan.commits == (CommitGroupOffsets("app", CONSUMER, {O0: 1}),)
    assert "exclude it with mirror.groups.include" in plan.conflicts[0].message


def test_consumer_group_with_a_share_group_name_is_a_conflict() -> None:
    plan = diff([GroupView("jobs", CONSUMER, {O0: 4})], [GroupView("jobs", SHARE)])
    assert plan.conflicts == (GroupConflict("jobs", CONSUMER, SHARE),)
    assert plan.commits == ()


def test_share_groups_sync_their_start_offsets() -> None:
    plan = diff([GroupView("jobs", SHARE, {O0: 4})], [GroupView("jobs", SHARE, {O0: 1})])
    assert plan.commits == (CommitGroupOffsets("jobs", SHARE, {O0: 4}),)


def test_share_start_offsets_never_move_backwards() -> None:
    source = GroupView("jobs", SHARE, {O0: 4, O1: 9})
    destination = GroupView("jobs", SHARE, {O0: 6, O1: 2})
    assert diff([source], [destination]).commits == (CommitGroupOffsets("jobs", SHARE, {O1: 9}),)


def test_share_groups_sync_only_mirroring_topics() -> None:
    offsets = {O0: 4, TopicPartition("paused", 0): 5, TopicPartition("local", 0): 6}
    assert diff([GroupView("jobs", SHARE, offsets)]).commits == (
        CommitGroupOffsets("jobs", SHARE, {O0: 4}),
    )


def test_uninitialized_share_partitions_are_not_synced() -> None:
    assert diff([GroupView("jobs", SHARE, {O0: -1})]) == GroupSyncPlan()


def test_share_group_with_members_on_the_destination_is_skipped() -> None:
    active = GroupView("jobs", SHARE, {O0: 1}, has_active_members=True)
    plan = diff([GroupView("jobs", SHARE, {O0: 4})], [active])
    assert plan == GroupSyncPlan(skipped_active=("jobs",))


def test_a_new_share_group_is_created_by_its_first_commit() -> None:
    plan = diff([GroupView("jobs", SHARE, {O0: 4})])
    assert plan.commits == (CommitGroupOffsets("jobs", SHARE, {O0: 4}),)


def test_unread_source_groups_are_reported_and_not_synced() -> None:
    unread = GroupView("jobs", SHARE, readable=False)
    plan = diff([unread, GroupView("app", CONSUMER, {O0: 1})])
    assert plan.unread == ("jobs",)
    assert plan.commits == (CommitGroupOffsets("app", CONSUMER, {O0: 1}),)


def test_an_unread_destination_group_is_not_committed_over() -> None:
    """Without the destination's start offsets "ahead" cannot be decided."""
    plan = diff([GroupView("jobs", SHARE, {O0: 4})], [GroupView("jobs", SHARE, readable=False)])
    assert plan == GroupSyncPlan(unread=("jobs",))


def test_a_conflict_is_reported_even_if_the_destination_is_unread() -> None:
    plan = diff([GroupView("jobs", CONSUMER, {O0: 4})], [GroupView("jobs", SHARE, readable=False)])
    assert plan == GroupSyncPlan(conflicts=(GroupConflict("jobs", CONSUMER, SHARE),))


def test_unread_groups_outside_the_include_filter_are_not_reported() -> None:
    assert diff([GroupView("jobs", SHARE, readable=False)], include="app-.*") == GroupSyncPlan()


def test_classic_and_consumer_groups_share_the_offset_model() -> None:
    plan = diff([GroupView("app", CONSUMER, {O0: 4})], [GroupView("app", GroupType.CLASSIC)])
    assert plan.conflicts == ()
    assert plan.commits == (CommitGroupOffsets("app", CONSUMER, {O0: 4}),)


def test_include_examples() -> None:
    groups = [GroupView(name, CONSUMER, {O0: 1}) for name in ("app-1", "service-a", "billing")]

    def synced(include: str) -> list[str]:
        return [c.group_id for c in diff(groups, include=include).commits]

    assert synced(".*") == ["app-1", "billing", "service-a"]
    assert synced("app-.*") == ["app-1"]
    assert synced("app-.*,service-.*") == ["app-1", "service-a"]
    assert synced("") == []


def test_group_type_from_list_groups() -> None:
    assert GroupType.from_wire("") is GroupType.CLASSIC
    assert GroupType.from_wire("Share") is GroupType.SHARE
    assert GroupType.from_wire("consumer") is GroupType.CONSUMER


# Convergence: committing a plan leaves nothing but the standing conflicts and skips.

PARTITIONS = st.sampled_from([O0, O1, TopicPartition("paused", 0), TopicPartition("x", 0)])
OFFSETS = st.dictionaries(PARTITIONS, st.integers(-1, 50), max_size=4)
TYPES = st.sampled_from(list(GroupType))


def group_views(names: list[str], draw: st.DrawFn, active: bool) -> list[GroupView]:
    return [
        GroupView(
            name,
            draw(TYPES),
            draw(OFFSETS),
            active and draw(st.booleans()),
            readable=draw(st.booleans()),
        )
        for name in names
    ]


@st.composite
def sides(draw: st.DrawFn) -> tuple[list[GroupView], list[GroupView]]:
    names = st.lists(st.sampled_from(["g1", "g2", "app-1", "app-2"]), unique=True)
    return group_views(draw(names), draw, False), group_views(draw(names), draw, True)


@given(sides(), st.sampled_from([".*", "app-.*", "g1,app-2"]))
def test_applying_a_group_plan_converges(
    state: tuple[list[GroupView], list[GroupView]], include: str
) -> None:
    source, destination = state
    filters = groups_include(include)
    plan = diff_groups(source, destination, MIRROR, filters)
    after = {group.group_id: group for group in destination}
    for commit in plan.commits:
        present = after.get(commit.group_id)
        assert present is None or not present.has_active_members
        before = present.offsets if present is not None else {}
        assert all(offset > before.get(tp, -1) for tp, offset in commit.offsets.items())
        after[commit.group_id] = GroupView(
            commit.group_id,
            present.group_type if present is not None else commit.group_type,
            {**before, **commit.offsets},
        )
    again = diff_groups(source, after.values(), MIRROR, filters)
    assert again == GroupSyncPlan(
        conflicts=plan.conflicts, skipped_active=plan.skipped_active, unread=plan.unread
    )


@given(sides(), st.sampled_from([".*", "app-.*", "g1,app-2"]))
def test_a_plan_commits_only_safe_offsets(
    state: tuple[list[GroupView], list[GroupView]], include: str
) -> None:
    """Whatever the views: a commit keeps its source group's type, goes to a group of the
    same kind (share or not), both sides readable and the destination without members,
    carries only MIRRORING partitions at the source's offset, and advances each one."""
    source, destination = state
    plan = diff_groups(source, destination, MIRROR, groups_include(include))
    by_id = {group.group_id: group for group in source}
    present = {group.group_id: group for group in destination}
    for commit in plan.commits:
        origin = by_id[commit.group_id]
        assert origin.readable and commit.group_type is origin.group_type
        target = present.get(commit.group_id)
        if target is not None:
            assert target.readable and not target.has_active_members
            assert target.group_type.is_share == origin.group_type.is_share
        for tp, offset in commit.offsets.items():
            assert tp.topic == "orders" and offset == origin.offsets[tp] >= 0
            assert target is None or offset > target.offsets.get(tp, -1)
    reported = [c.group_id for c in plan.commits] + [c.group_id for c in plan.conflicts]
    reported += [*plan.skipped_active, *plan.unread]
    assert len(reported) == len(set(reported))


@given(sides())
def test_share_and_consumer_groups_are_planned_independently(
    state: tuple[list[GroupView], list[GroupView]],
) -> None:
    """Share groups are planned as if the source had no other groups, and the other way
    round: one kind's start offsets never leak into the other's commits."""
    source, destination = state
    include = groups_include()
    whole = diff_groups(source, destination, MIRROR, include)
    for is_share in (True, False):
        part = diff_groups(
            [g for g in source if g.group_type.is_share == is_share], destination, MIRROR, include
        )
        assert part.commits == tuple(c for c in whole.commits if c.group_type.is_share == is_share)


def test_offsets_keyed_by_the_group_coordinator_topic_partition_are_accepted() -> None:
    key = CoordinatorPartition("orders", 0)
    plan = diff([GroupView("app", CONSUMER, {key: 3})], [GroupView("app", CONSUMER, {O0: 1})])
    assert plan.commits[0].offsets == {key: 3}
