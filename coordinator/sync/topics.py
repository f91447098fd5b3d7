"""Topic sync of one mirror: which destination changes make its mirror topics match the source.

Theory of operation. Each refresh cycle the executor reads both clusters into `TopicView`s
(name, topic id, partition count and the topic-level config overrides) and passes the
mirror's topics with their status. `diff_topics` returns the operations that bring the
destination in line; applying them and diffing again yields nothing, so a cycle that
finds the clusters equal sends no request at all.

Rules, per mirror topic that is MIRRORING (PAUSED and STOPPED topics get no metadata sync):
- on the source, not on the destination → `CreateMirrorTopic` with the source topic id,
  partition count and the synced configs;
- more partitions on the source → `CreatePartitions` to the source count (Kafka cannot
  shrink a topic, so fewer partitions on the source changes nothing);
- synced configs differ → one `AlterTopicConfigs` that sets the source overrides and
  deletes destination-only overrides, so they fall back to the destination default;
- gone from the source, or the source name now carries another topic id (deleted and
  recreated) → `StopMirrorPartitions`: the destination keeps its data and becomes
  writable instead of following a deletion.

Only topic-level overrides are compared (DescribeConfigs source TOPIC_CONFIG): broker
defaults belong to each cluster. Config names matching the exclude list are never read
or written on either side.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol

from mirrorsim.coordinator.sync.patterns import PatternList, split_list

MIRROR_TOPIC_PROPERTIES_EXCLUDE = "mirror.topic.properties.exclude"
DEFAULT_TOPIC_PROPERTIES_EXCLUDE = (
    "follower.replication.throttled.replicas, leader.replication.throttled.replicas, "
    "message.timestamp.difference.max.ms, log.message.timestamp.before.max.ms, "
    "log.message.timestamp.after.max.ms, message.timestamp.type, "
    "unclean.leader.election.enable, min.insync.replicas, mirror.name"
)
ALWAYS_EXCLUDED = (r"mirror\..*",)
"""`mirror.name` and every other `mirror.*` topic config (throttled replicas, unclean
leader election support) steer the destination's own mirroring: never copied, never reset."""

TOPIC_CONFIG_SOURCE = 1
"""DescribeConfigs ConfigSource of a topic-level override (DYNAMIC_TOPIC_CONFIG)."""


def topic_config_exclusion(value: str = DEFAULT_TOPIC_PROPERTIES_EXCLUDE) -> PatternList:
    """The config names kept out of sync: the mirror's exclude list plus `ALWAYS_EXCLUDED`."""
    return PatternList.of(
        [*split_list(value), *ALWAYS_EXCLUDED], config=MIRROR_TOPIC_PROPERTIES_EXCLUDE
    )


class DescribedConfig(Protocol):
    """One entry of a DescribeConfigs result (the Admin client's `ConfigEntry` fits)."""

    @property
    def name(self) -> str: ...
    @property
    def value(self) -> str | None: ...
    @property
    def source(self) -> int: ...


def topic_overrides(entries: Iterable[DescribedConfig]) -> dict[str, str]:
    """The configs set on the topic itself, the only ones a `TopicView` carries."""
    return {
        entry.name: entry.value
        for entry in entries
        if entry.source == TOPIC_CONFIG_SOURCE and entry.value is not None
    }


def _frozen(configs: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(configs))


@dataclass(frozen=True)
class TopicView:
    name: str
    topic_id: uuid.UUID
    partition_count: int
    configs: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "configs", _frozen(self.configs))


class MirrorTopicStatus(enum.Enum):
    """What the mirror does with a topic: `mirror.name` plain, `.paused`, or stopped
    (`.removed`, or its partitions already STOPPING/STOPPED after a source deletion)."""

    MIRRORING = "mirroring"
    PAUSED = "paused"
    STOPPED = "stopped"


@dataclass(frozen=True)
class MirrorTopic:
    name: str
    status: MirrorTopicStatus = MirrorTopicStatus.MIRRORING


class StopReason(enum.Enum):
    SOURCE_TOPIC_DELETED = "source topic deleted"
    TOPIC_ID_MISMATCH = "source topic id differs from the destination topic id"


@dataclass(frozen=True)
class CreateMirrorTopic:
    name: str
    topic_id: uuid.UUID
    partitions: int
    configs: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "configs", _frozen(self.configs))


@dataclass(frozen=True)
class CreatePartitions:
    name: str
    new_total: int


@dataclass(frozen=True)
class AlterTopicConfigs:
    """One IncrementalAlterConfigs resource: SET ops for `set`, DELETE ops for `delete`."""

    name: str
    set: Mapping[str, str] = field(default_factory=dict)
    delete: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        object.__setattr__(self, "set", _frozen(self.set))
        object.__setattr__(self, "delete", frozenset(self.delete))


@dataclass(frozen=True)
class StopMirrorPartitions:
    name: str
    reason: StopReason


TopicOperation = CreateMirrorTopic | CreatePartitions | AlterTopicConfigs | StopMirrorPartitions


def diff_topics(
    source: Iterable[TopicView],
    destination: Iterable[TopicView],
    mirror_topics: Iterable[MirrorTopic],
    exclude: PatternList,
) -> tuple[TopicOperation, ...]:
    """Operations that make the destination's mirror topics match the source, by topic name."""
    source_by_name = {topic.name: topic for topic in source}
    destination_by_name = {topic.name: topic for topic in destination}
    excluded = _ExclusionCache(exclude)
    operations: list[TopicOperation] = []
    for mirror_topic in sorted(mirror_topics, key=lambda topic: topic.name):
        if mirror_topic.status is not MirrorTopicStatus.MIRRORING:
            continue
        operations.extend(
            _diff_topic(
                source_by_name.get(mirror_topic.name),
                destination_by_name.get(mirror_topic.name),
                excluded,
            )
        )
    return tuple(operations)


def _diff_topic(
    source: TopicView | None, destination: TopicView | None, excluded: _ExclusionCache
) -> list[TopicOperation]:
    if destination is None:
        if source is None:
            return []
        return [
            CreateMirrorTopic(
                source.name, source.topic_id, source.partition_count, excluded.synced(source)
            )
        ]
    if source is None:
        return [StopMirrorPartitions(destination.name, StopReason.SOURCE_TOPIC_DELETED)]
    if source.topic_id != destination.topic_id:
        return [StopMirrorPartitions(destination.name, StopReason.TOPIC_ID_MISMATCH)]
    operations: list[TopicOperation] = []
    if source.partition_count > destination.partition_count:
        operations.append(CreatePartitions(source.name, source.partition_count))
    wanted = excluded.synced(source)
    present = excluded.synced(destination)
    to_set = {name: value for name, value in wanted.items() if present.get(name) != value}
    to_delete = present.keys() - wanted.keys()
    if to_set or to_delete:
        operations.append(AlterTopicConfigs(source.name, to_set, frozenset(to_delete)))
    return operations


class _ExclusionCache:
    """Config names repeat across thousands of topics; each is matched against the exclude
    list once per diff."""

    def __init__(self, exclude: PatternList) -> None:
        self._exclude = exclude
        self._verdicts: dict[str, bool] = {}

    def synced(self, topic: TopicView) -> dict[str, str]:
        return {name: value for name, value in topic.configs.items() if not self._is_excluded(name)}

    def _is_excluded(self, name: str) -> bool:
        verdict = self._verdicts.get(name)
        if verdict is None:
            verdict = self._verdicts[name] = self._exclude.matches(name)
        return verdict
