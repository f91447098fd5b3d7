"""Consumer groups' committed offsets, read from a live cluster through the Admin API.

The result has the shape the offset files of ``inputs`` have, so the consumer-group
check (``compare_committed_offsets``) runs unchanged on commits read from both clusters.
Only groups whose id fully matches the groups regex and commits on topics fully matching
the topic regex are kept: a commit on a topic the job does not read could only ever
point at nothing.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from types import MappingProxyType

from mirrorsim.client import Admin
from mirrorsim.verify.live_partitions import CLIENT_ID
from mirrorsim.verify.segments import TopicPartition

CommittedOffsets = dict[str, dict[TopicPartition, int]]


async def list_committed_offsets(
    bootstrap: str,
    *,
    groups: str,
    topic: str | None = None,
    config: Mapping[str, str] = MappingProxyType({}),
) -> CommittedOffsets:
    """``{group: {topic partition: committed offset}}`` for every matching group."""
    group_pattern = re.compile(groups)
    topic_pattern = re.compile(topic) if topic else None
    async with Admin(bootstrap, config=config, client_id=CLIENT_ID) as admin:
        listed = await admin.list_consumer_groups()
        ids = [g.group_id for g in listed if group_pattern.fullmatch(g.group_id)]
        fetched = await asyncio.gather(*(admin.list_consumer_group_offsets(g) for g in ids))
    return {
        group: {
            TopicPartition(tp.topic, tp.partition): committed.offset
            for tp, committed in offsets.items()
            if topic_pattern is None or topic_pattern.fullmatch(tp.topic)
        }
        for group, offsets in zip(ids, fetched, strict=True)
    }


def read_committed_offsets(
    bootstrap: str,
    *,
    groups: str,
    topic: str | None = None,
    config: Mapping[str, str] = MappingProxyType({}),
) -> CommittedOffsets:
    """The blocking form, for the driver of a job (no event loop of its own)."""
    return asyncio.run(list_committed_offsets(bootstrap, groups=groups, topic=topic, config=config))
