"""How ``__consumer_offsets`` is presented to clients, though no such log exists here.

Committed offsets live in the metadata store (``groups.md``), so there is no partition to
read or write. Clients still expect Kafka's internal topic: tools list internal topics,
and consumers apply ``exclude.internal.topics`` to it. Metadata therefore shows it as
Kafka would: internal, ``offsets.topic.num.partitions`` partitions, and as each
partition's leader the live broker that coordinates the groups hashed onto it (the same
mapping FindCoordinator answers with, ``ownership.py``), so the picture agrees with where
the groups really are. Its topic id is derived from the cluster id, stable across
restarts.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

OFFSETS_TOPIC = "__consumer_offsets"
_TOPIC_ID_NAMESPACE = uuid.UUID("6f0b6a2e-3c1d-4c0e-9a57-2b8f6d1e4c31")


def offsets_topic_id(cluster_id: str) -> uuid.UUID:
    return uuid.uuid5(_TOPIC_ID_NAMESPACE, f"{cluster_id}/{OFFSETS_TOPIC}")


def offsets_topic_leaders(partition_count: int, live_broker_ids: Sequence[int]) -> list[int]:
    """The leader of each partition: the broker coordinating the groups hashed onto it
    (-1 for every partition when no broker is live)."""
    ordered = sorted(live_broker_ids)
    if not ordered:
        return [-1] * partition_count
    return [ordered[partition % len(ordered)] for partition in range(partition_count)]
