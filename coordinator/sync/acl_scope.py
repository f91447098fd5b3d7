"""Which destination ACLs one mirror's sync owns: only those of its MIRRORING topics.

Theory of operation. The spec halts metadata sync (configs, groups, ACLs) for paused
topics, and a removed (STOPPED) topic belongs to the destination: after a failover its
operators grant access there (a new producer's WRITE), and a sync that still compared the
whole ACL set with the source deleted those grants on its next cycle. A mirror's ACL sync
therefore creates and deletes only bindings whose resources are its MIRRORING topics:

- a TOPIC binding with a literal name is in scope when that topic is MIRRORING in this
  mirror;
- a TOPIC binding that names several topics (a PREFIXED pattern or the literal ``*``) is
  in scope when it covers at least one MIRRORING topic of this mirror and no other
  destination topic (a paused or stopped one, another mirror's, a local one);
- a binding of any other resource (group, transactional id, cluster, user, delegation
  token, cluster mirror) belongs to no topic: it is in scope only while the destination
  is a pure copy of this mirror's source, every topic on it MIRRORING in this mirror.
  Once any topic there is the destination's own (failed over, paused, local, or the
  source side of a mirror going the other way), groups and transactional ids on it are
  the destination's too.

So two mirrors of opposite directions (a failback in progress: A→B with the topic
STOPPED on B, B→A with it MIRRORING on A) never undo each other: the stopped side syncs
none of the topic's ACLs, and neither side syncs cluster-wide ACLs while both hold topics
of their own. Internal topics (names starting with ``__``) are nobody's ACL concern here
and are left out of "every topic".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from mirrorsim.coordinator.sync.topics import MirrorTopic, MirrorTopicStatus
from mirrorsim.protocol.acl import WILDCARD, AclBinding, PatternType, ResourceType

INTERNAL_TOPIC_PREFIX = "__"


@dataclass(frozen=True)
class AclScope:
    """The destination resources one mirror's ACL sync may create and delete bindings of."""

    synced_topics: frozenset[str]
    """This mirror's MIRRORING topics."""
    other_topics: frozenset[str]
    """Every other non-internal destination topic."""

    @classmethod
    def of(
        cls, mirror_topics: Iterable[MirrorTopic], destination_topics: Iterable[str]
    ) -> AclScope:
        synced = frozenset(t.name for t in mirror_topics if t.status is MirrorTopicStatus.MIRRORING)
        others = frozenset(
            name
            for name in destination_topics
            if name not in synced and not name.startswith(INTERNAL_TOPIC_PREFIX)
        )
        return cls(synced, others)

    @property
    def is_pure_copy(self) -> bool:
        """Every destination topic is MIRRORING in this mirror (and there is one)."""
        return bool(self.synced_topics) and not self.other_topics

    def covers(self, binding: AclBinding) -> bool:
        if binding.resource_type != ResourceType.TOPIC:
            return self.is_pure_copy
        if binding.pattern_type == PatternType.LITERAL and binding.resource_name != WILDCARD:
            return binding.resource_name in self.synced_topics
        return any(_names(binding, self.synced_topics)) and not any(
            _names(binding, self.other_topics)
        )


def _names(binding: AclBinding, topics: frozenset[str]) -> Iterable[str]:
    """The topics of ``topics`` a PREFIXED or wildcard TOPIC binding applies to."""
    if binding.pattern_type == PatternType.PREFIXED:
        return (name for name in topics if name.startswith(binding.resource_name))
    return iter(topics)
