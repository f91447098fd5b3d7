"""Consumer and share group offset sync of one mirror.

Theory of operation. The executor lists the groups on both clusters, fetches their
committed offsets (OffsetFetch, or the share-partition start offset from
DescribeShareGroupOffsets for share groups) and passes them as `GroupView`s. `diff_groups`
decides, per source group selected by `mirror.groups.include`:
- only partitions of topics the mirror is MIRRORING are synced: paused topics get no
  metadata sync and stopped topics belong to the destination's own consumers;
- an offset is committed only when it is ahead of the destination's committed offset, so
  a group never moves backwards (a late cycle reading an older source view cannot undo
  progress made since);
- a commit beyond the destination's log end offset is fine: the mirror fetcher catches
  up, and consumers reading mirror topics should use `auto.offset.reset=latest`;
- a group with active members on the destination is skipped: its consumers own its
  offsets, and the coordinator would reject the commit;
- a share group on one side and a consumer group of the same name on the other is a
  `GroupConflict`; the other groups are synced as usual;
- a group whose offsets a cluster could not read (a source without
  DescribeShareGroupOffsets) is not synced and is reported as unread: with no source
  view there is nothing to copy, and with no destination view "ahead" cannot be decided.

A share group's offset is its share-partition start offset (SPSO): every record below it
is acknowledged or archived. Only the SPSO is synced; what the source holds above it
(acquired records, acknowledgements past the first unacknowledged one, delivery counts)
and the group's members are not, so a share consumer that fails over is delivered again
every record from the synced SPSO on.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NamedTuple

from mirrorsim.coordinator.sync.patterns import PatternList
from mirrorsim.coordinator.sync.topics import MirrorTopic, MirrorTopicStatus

MIRROR_GROUPS_INCLUDE = "mirror.groups.include"
DEFAULT_GROUPS_INCLUDE = ".*"


class TopicPartition(NamedTuple):
    """Equal to (and hashing like) the client's and the group coordinator's TopicPartition,
    which are tuples too; defined here so the sync rules import neither of those layers."""

    topic: str
    partition: int


def groups_include(value: str = DEFAULT_GROUPS_INCLUDE) -> PatternList:
    return PatternList.parse(value, config=MIRROR_GROUPS_INCLUDE)


class GroupType(enum.Enum):
    """ListGroups' GroupType; share groups keep a share-partition start offset, the others
    a committed offset, and one name cannot be both on one cluster."""

    CLASSIC = "classic"
    CONSUMER = "consumer"
    SHARE = "share"
    STREAMS = "streams"

    @classmethod
    def from_wire(cls, value: str) -> GroupType:
        """ListGroups before v5 sends no type: those groups are classic."""
        return cls(value.lower()) if value else cls.CLASSIC

    @property
    def is_share(self) -> bool:
        return self is GroupType.SHARE


def _offsets(offsets: Mapping[tuple[str, int], int]) -> Mapping[TopicPartition, int]:
    """Plain `(topic, partition)` keys become `TopicPartition`s (equal and hashing alike)."""
    return MappingProxyType({TopicPartition(*key): offset for key, offset in offsets.items()})


@dataclass(frozen=True)
class GroupView:
    """One cluster's group: committed offsets (start offsets for a share group).
    ``readable`` is False when the cluster could not answer for the offsets; ``offsets``
    then means nothing."""

    group_id: str
    group_type: GroupType
    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)
    has_active_members: bool = False
    readable: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "offsets", _offsets(self.offsets))


@dataclass(frozen=True)
class CommitGroupOffsets:
    """OffsetCommit (AlterShareGroupOffsets for a share group) of the offsets that advance."""

    group_id: str
    group_type: GroupType
    offsets: Mapping[TopicPartition, int]

    def __post_init__(self) -> None:
        object.__setattr__(self, "offsets", _offsets(self.offsets))


@dataclass(frozen=True)
class GroupConflict:
    group_id: str
    source_type: GroupType
    destination_type: GroupType

    @property
    def message(self) -> str:
        return (
            f"group {self.group_id} is a {self.source_type.value} group on the source but a "
            f"{self.destination_type.value} group on the destination; delete it on the "
            f"destination or exclude it with {MIRROR_GROUPS_INCLUDE}"
        )


@dataclass(frozen=True)
class GroupSyncPlan:
    commits: tuple[CommitGroupOffsets, ...] = ()
    conflicts: tuple[GroupConflict, ...] = ()
    skipped_active: tuple[str, ...] = ()
    """Groups behind the source that were left alone because they have members."""
    unread: tuple[str, ...] = ()
    """Groups left alone because one side's offsets could not be read."""


def diff_groups(
    source: Iterable[GroupView],
    destination: Iterable[GroupView],
    mirror_topics: Iterable[MirrorTopic],
    include: PatternList,
) -> GroupSyncPlan:
    synced_topics = {
        topic.name for topic in mirror_topics if topic.status is MirrorTopicStatus.MIRRORING
    }
    destination_by_id = {group.group_id: group for group in destination}
    commits: list[CommitGroupOffsets] = []
    conflicts: list[GroupConflict] = []
    skipped_active: list[str] = []
    unread: list[str] = []
    for group in sorted(source, key=lambda group: group.group_id):
        if not include.matches(group.group_id):
            continue
        if not group.readable:
            unread.append(group.group_id)
            continue
        wanted = {
            partition: offset
            for partition, offset in group.offsets.items()
            if offset >= 0 and partition.topic in synced_topics
        }
        if not wanted:
            continue
        present = destination_by_id.get(group.group_id)
        if present is not None and present.group_type.is_share != group.group_type.is_share:
            conflicts.append(GroupConflict(group.group_id, group.group_type, present.group_type))
            continue
        if present is not None and not present.readable:
            unread.append(group.group_id)
            continue
        committed = present.offsets if present is not None else {}
        ahead = {
            partition: offset
            for partition, offset in wanted.items()
            if offset > committed.get(partition, -1)
        }
        if not ahead:
            continue
        if present is not None and present.has_active_members:
            skipped_active.append(group.group_id)
            continue
        commits.append(CommitGroupOffsets(group.group_id, group.group_type, ahead))
    return GroupSyncPlan(tuple(commits), tuple(conflicts), tuple(skipped_active), tuple(unread))
