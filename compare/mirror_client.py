"""MM2's ``MirrorClient`` view of replication hops, read from a cluster's heartbeats topics.

Every MM2 flow replicates the source's heartbeats topics, each hop adding its source
alias as a prefix, so ``b.a.heartbeats`` on a cluster says that heartbeats from ``a``
arrive through ``b``: two hops. The names alone tell how far away an upstream cluster is,
which is how MM2's tooling finds upstream clusters without any other metadata.
"""

from __future__ import annotations

from mirrorsim.client import Admin
from mirrorsim.compare.replication_policy import ReplicationPolicy

NOT_UPSTREAM = -1


def count_hops_for_topic(policy: ReplicationPolicy, topic: str, source_alias: str) -> int:
    """Hops from ``source_alias`` to the cluster holding ``topic`` (``countHopsForTopic``),
    or -1 when the alias is not among the topic's prefixes. A prefix seen twice means a
    policy that cannot prevent cycles: the walk stops there."""
    hops = 0
    visited: set[str] = set()
    current: str | None = topic
    while current is not None:
        hops += 1
        source = policy.topic_source(current)
        if source is None or source in visited:
            return NOT_UPSTREAM
        if source == source_alias:
            return hops
        visited.add(source)
        current = policy.upstream_topic(current)
    return NOT_UPSTREAM


async def hops(bootstrap: str, source_alias: str, policy: ReplicationPolicy | None = None) -> int:
    """``MirrorClient.replicationHops``: the fewest hops over which heartbeats from
    ``source_alias`` reach the cluster at ``bootstrap``, -1 when none do."""
    policy = policy or ReplicationPolicy()
    async with Admin(bootstrap=bootstrap) as admin:
        topics = await admin.list_topics()
    counts = [
        count_hops_for_topic(policy, topic, source_alias)
        for topic in topics
        if policy.is_heartbeats_topic(topic)
    ]
    return min((c for c in counts if c != NOT_UPSTREAM), default=NOT_UPSTREAM)
