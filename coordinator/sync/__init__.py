"""MirrorMetadataManager sync rules as pure diffs: (source view, destination view,
filters) → operations. An executor reads the views through the client layer and sends
the operations; nothing here performs I/O."""

from mirrorsim.coordinator.sync.acl_scope import AclScope
from mirrorsim.coordinator.sync.acls import (
    AclIncludeRule,
    AclIncludeRules,
    AclRuleError,
    AclSyncOperation,
    CreateAcls,
    DeleteAcls,
    diff_acls,
    parse_acl_include,
    parse_acl_rule,
)
from mirrorsim.coordinator.sync.cluster_id import ClusterIdCheck, check_source_cluster_id
from mirrorsim.coordinator.sync.filters import MirrorSyncFilters
from mirrorsim.coordinator.sync.groups import (
    CommitGroupOffsets,
    GroupConflict,
    GroupSyncPlan,
    GroupType,
    GroupView,
    TopicPartition,
    diff_groups,
    groups_include,
)
from mirrorsim.coordinator.sync.patterns import PatternList, SyncFilterError, split_list
from mirrorsim.coordinator.sync.topics import (
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

__all__ = [
    "AclIncludeRule",
    "AclIncludeRules",
    "AclRuleError",
    "AclScope",
    "AclSyncOperation",
    "AlterTopicConfigs",
    "ClusterIdCheck",
    "CommitGroupOffsets",
    "CreateAcls",
    "CreateMirrorTopic",
    "CreatePartitions",
    "DeleteAcls",
    "GroupConflict",
    "GroupSyncPlan",
    "GroupType",
    "GroupView",
    "MirrorSyncFilters",
    "MirrorTopic",
    "MirrorTopicStatus",
    "PatternList",
    "StopMirrorPartitions",
    "StopReason",
    "SyncFilterError",
    "TopicOperation",
    "TopicPartition",
    "TopicView",
    "check_source_cluster_id",
    "diff_acls",
    "diff_groups",
    "diff_topics",
    "groups_include",
    "parse_acl_include",
    "parse_acl_rule",
    "split_list",
    "topic_config_exclusion",
    "topic_overrides",
]
