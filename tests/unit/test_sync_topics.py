"""Topic sync rules: creation, partition expansion, config alignment, stop on deletion."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, replace

from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.client.admin_types import ConfigEntry, ConfigSource
from mirrorsim.coordinator.sync import (
    AlterTopicConfigs,
    CreateMirrorTopic,
    CreatePartitions,
    MirrorTopic,
    MirrorTopicStatus,
    StopMirrorPartitions,
    StopReason,
    TopicOperation,
    TopicView,
    diff_topics,
    topic_config_exclusion,
    topic_overrides,
)

ORDERS_ID = uuid.UUID(int=1)
EXCLUDE = topic_config_exclusion()


def view(
    name: str = "orders", partitions: int = 3, topic_id: uuid.UUID = ORDERS_ID, **configs: str
) -> TopicView:
    return TopicView(
        name, topic_id, partitions, {k.replace("_", "."): v for k, v in configs.items()}
    )


def diff(
    source: Iterable[TopicView],
    destination: Iterable[TopicView],
    status: MirrorTopicStatus = MirrorTopicStatus.MIRRORING,
    names: Iterable[str] = ("orders",),
) -> tuple[TopicOperation, ...]:
    return diff_topics(source, destination, [MirrorTopic(n, status) for n in names], EXCLUDE)


def test_missing_topic_is_created_with_source_id_partitions_and_synced_configs() -> None:
    source = view(partitions=6, retention_ms="1000", min_insync_replicas="2")
    assert diff([source], []) == (
        CreateMirrorTopic("orders", ORDERS_ID, 6, {"retention.ms": "1000"}),
    )


def test_equal_topics_produce_nothing() -> None:
    topic = view(retention_ms="1000", cleanup_policy="compact")
    assert diff([topic], [topic]) == ()


def test_more_source_partitions_expand_the_destination() -> None:
    assert diff([view(partitions=8)], [view(partitions=3)]) == (CreatePartitions("orders", 8),)


def test_fewer_source_partitions_change_nothing() -> None:
    assert diff([view(partitions=2)], [view(partitions=3)]) == ()


def test_config_difference_sets_source_values() -> None:
    source = view(retention_ms="1000", cleanup_policy="compact")
    destination = view(retention_ms="5", cleanup_policy="compact")
    assert diff([source], [destination]) == (AlterTopicConfigs("orders", {"retention.ms": "1000"}),)


def test_destination_only_override_is_reset() -> None:
    assert diff([view()], [view(retention_ms="5")]) == (
        AlterTopicConfigs("orders", delete=frozenset({"retention.ms"})),
    )


def test_excluded_configs_are_neither_copied_nor_reset() -> None:
    source = view(min_insync_replicas="2", unclean_leader_election_enable="true")
    destination = view(
        min_insync_replicas="1",
        follower_replication_throttled_replicas="0:1",
    )
    destination = replace(
        destination,
        configs={
            **destination.configs,
            "mirror.name": "m",
            "mirror.replication.throttled.replicas": "0:4",
        },
    )
    assert diff([source], [destination]) == ()


def test_user_exclude_list_replaces_the_default_but_keeps_mirror_configs() -> None:
    exclude = topic_config_exclusion(".*throttled.*")
    source = view(min_insync_replicas="2", leader_replication_throttled_replicas="*")
    destination = replace(view(), configs={"mirror.name": "m"})
    operations = diff_topics([source], [destination], [MirrorTopic("orders")], exclude)
    assert operations == (AlterTopicConfigs("orders", {"min.insync.replicas": "2"}),)


def test_partitions_and_configs_in_one_cycle() -> None:
    assert diff([view(partitions=4, retention_ms="9")], [view(partitions=2)]) == (
        CreatePartitions("orders", 4),
        AlterTopicConfigs("orders", {"retention.ms": "9"}),
    )


def test_source_deletion_stops_the_mirror_partitions() -> None:
    assert diff([], [view()]) == (StopMirrorPartitions("orders", StopReason.SOURCE_TOPIC_DELETED),)


def test_recreated_source_topic_stops_the_mirror_partitions() -> None:
    recreated = view(topic_id=uuid.UUID(int=2))
    assert diff([recreated], [view()]) == (
        StopMirrorPartitions("orders", StopReason.TOPIC_ID_MISMATCH),
    )


def test_topic_on_neither_side_is_nothing_to_do() -> None:
    assert diff([], []) == ()


def test_paused_and_stopped_topics_get_no_sync() -> None:
    for status in (MirrorTopicStatus.PAUSED, MirrorTopicStatus.STOPPED):
        assert diff([view(partitions=9, retention_ms="1")], [view()], status) == ()
        assert diff([], [view()], status) == ()
        assert diff([view()], [], status) == ()


def test_only_mirror_topics_are_considered() -> None:
    other = view(name="payments", topic_id=uuid.UUID(int=7), partitions=5)
    assert diff([other, view()], [view()]) == ()


def test_operations_come_in_topic_name_order() -> None:
    names = ["b", "a", "c"]
    source = [view(name=n, topic_id=uuid.UUID(int=i)) for i, n in enumerate(names)]
    operations = diff(source, [], names=names)
    assert [op.name for op in operations] == ["a", "b", "c"]


def test_topic_overrides_keep_only_topic_level_values() -> None:
    entries = [
        ConfigEntry("retention.ms", "1000", ConfigSource.DYNAMIC_TOPIC_CONFIG),
        ConfigEntry("segment.bytes", "1073741824", ConfigSource.DEFAULT_CONFIG),
        ConfigEntry("min.insync.replicas", "2", ConfigSource.STATIC_BROKER_CONFIG),
        ConfigEntry("secret", None, ConfigSource.DYNAMIC_TOPIC_CONFIG),
    ]
    assert topic_overrides(entries) == {"retention.ms": "1000"}


# Convergence: applying a diff's operations to the destination leaves nothing to do.

TOPIC_NAMES = ["a", "b", "c", "d", "e"]
SOURCE_IDS = {name: uuid.UUID(int=i + 1) for i, name in enumerate(TOPIC_NAMES)}
SOME_TOPICS = st.lists(st.sampled_from(TOPIC_NAMES), unique=True)
CONFIG_NAMES = st.sampled_from(
    [
        "retention.ms",
        "cleanup.policy",
        "segment.ms",
        "min.insync.replicas",
        "mirror.name",
        "leader.replication.throttled.replicas",
    ]
)
CONFIGS = st.dictionaries(CONFIG_NAMES, st.sampled_from(["1", "2", "x"]), max_size=4)


@st.composite
def sides(draw: st.DrawFn) -> tuple[list[TopicView], list[TopicView], list[MirrorTopic]]:
    """Both clusters and the mirror over five names; a destination topic may carry a
    foreign topic id (the source recreated it)."""
    source = [
        TopicView(name, SOURCE_IDS[name], draw(st.integers(1, 6)), draw(CONFIGS))
        for name in draw(SOME_TOPICS)
    ]
    destination = [
        TopicView(
            name,
            draw(st.sampled_from([SOURCE_IDS[name], uuid.UUID(int=99)])),
            draw(st.integers(1, 6)),
            draw(CONFIGS),
        )
        for name in draw(SOME_TOPICS)
    ]
    mirror = [
        MirrorTopic(name, draw(st.sampled_from(list(MirrorTopicStatus))))
        for name in draw(SOME_TOPICS)
    ]
    return source, destination, mirror


@dataclass
class Destination:
    topics: dict[str, TopicView]
    mirror: dict[str, MirrorTopic]

    def apply(self, operation: TopicOperation) -> None:
        match operation:
            case CreateMirrorTopic(name, topic_id, partitions, configs):
                assert name not in self.topics
                self.topics[name] = TopicView(name, topic_id, partitions, configs)
            case CreatePartitions(name, new_total):
                assert new_total > self.topics[name].partition_count
                self.topics[name] = replace(self.topics[name], partition_count=new_total)
            case AlterTopicConfigs(name, to_set, to_delete):
                configs = {k: v for k, v in self.topics[name].configs.items() if k not in to_delete}
                self.topics[name] = replace(self.topics[name], configs={**configs, **to_set})
            case StopMirrorPartitions(name, _):
                self.mirror[name] = MirrorTopic(name, MirrorTopicStatus.STOPPED)


@given(sides())
def test_applying_a_topic_diff_converges(
    state: tuple[list[TopicView], list[TopicView], list[MirrorTopic]],
) -> None:
    source, destination, mirror = state
    target = Destination({t.name: t for t in destination}, {m.name: m for m in mirror})
    for operation in diff_topics(source, destination, mirror, EXCLUDE):
        target.apply(operation)
    assert diff_topics(source, target.topics.values(), target.mirror.values(), EXCLUDE) == ()
    for topic in source:
        synced = target.mirror.get(topic.name)
        if synced is not None and synced.status is MirrorTopicStatus.MIRRORING:
            reached = target.topics[topic.name]
            assert reached.topic_id == topic.topic_id
            assert reached.partition_count >= topic.partition_count
            assert {k: v for k, v in reached.configs.items() if not EXCLUDE.matches(k)} == {
                k: v for k, v in topic.configs.items() if not EXCLUDE.matches(k)
            }


@given(sides())
def test_a_diff_never_touches_excluded_configs(
    state: tuple[list[TopicView], list[TopicView], list[MirrorTopic]],
) -> None:
    for operation in diff_topics(*state, EXCLUDE):
        match operation:
            case CreateMirrorTopic(configs=configs):
                touched = set(configs)
            case AlterTopicConfigs(set=configs, delete=deleted):
                touched = set(configs) | deleted
            case _:
                touched = set()
        assert not any(EXCLUDE.matches(name) for name in touched)
