"""MirrorClient's hop counting and the heartbeats topics' names (DefaultReplicationPolicy)."""

from __future__ import annotations

import pytest

from mirrorsim.compare.mirror_client import NOT_UPSTREAM, count_hops_for_topic
from mirrorsim.compare.replication_policy import ReplicationPolicy

POLICY = ReplicationPolicy()


@pytest.mark.parametrize(
    ("topic", "alias", "expected"),
    [
        ("a.heartbeats", "a", 1),
        ("b.a.heartbeats", "a", 2),
        ("b.a.heartbeats", "b", 1),
        ("c.b.a.heartbeats", "a", 3),
        ("heartbeats", "a", NOT_UPSTREAM),
        ("b.a.heartbeats", "c", NOT_UPSTREAM),
        ("a.b.a.heartbeats", "c", NOT_UPSTREAM),
    ],
)
def test_count_hops_for_topic(topic: str, alias: str, expected: int) -> None:
    assert count_hops_for_topic(POLICY, topic, alias) == expected


@pytest.mark.parametrize(
    ("topic", "heartbeats"),
    [
        ("heartbeats", True),
        ("a.heartbeats", True),
        ("b.a.heartbeats", True),
        ("heartbeats.a", False),
        ("a.orders", False),
        ("mm2-offset-syncs.b.internal", False),
    ],
)
def test_heartbeats_topics_are_recognised_at_any_hop(topic: str, heartbeats: bool) -> None:
    assert POLICY.is_heartbeats_topic(topic) is heartbeats
    assert not POLICY.is_internal(topic) or topic.endswith(".internal")
