"""A mirror's three sync filters, read from its configuration at each refresh cycle."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mirrorsim.coordinator.sync.acls import (
    DEFAULT_ACL_INCLUDE,
    MIRROR_ACL_INCLUDE,
    AclIncludeRules,
    parse_acl_include,
)
from mirrorsim.coordinator.sync.groups import (
    DEFAULT_GROUPS_INCLUDE,
    MIRROR_GROUPS_INCLUDE,
    groups_include,
)
from mirrorsim.coordinator.sync.patterns import PatternList
from mirrorsim.coordinator.sync.topics import (
    DEFAULT_TOPIC_PROPERTIES_EXCLUDE,
    MIRROR_TOPIC_PROPERTIES_EXCLUDE,
    topic_config_exclusion,
)


@dataclass(frozen=True)
class MirrorSyncFilters:
    topic_config_exclude: PatternList
    groups_include: PatternList
    acl_include: AclIncludeRules

    @classmethod
    def from_mirror_config(cls, config: Mapping[str, str]) -> MirrorSyncFilters:
        """Missing keys take the spec's defaults; a bad value raises `SyncFilterError`."""
        return cls(
            topic_config_exclude=topic_config_exclusion(
                config.get(MIRROR_TOPIC_PROPERTIES_EXCLUDE, DEFAULT_TOPIC_PROPERTIES_EXCLUDE)
            ),
            groups_include=groups_include(
                config.get(MIRROR_GROUPS_INCLUDE, DEFAULT_GROUPS_INCLUDE)
            ),
            acl_include=parse_acl_include(config.get(MIRROR_ACL_INCLUDE, DEFAULT_ACL_INCLUDE)),
        )
