"""What a live cluster holds right now: each topic partition's [log start, end offset).

The planner of the ``mirrorsim-kafka`` data source asks the cluster once, through
Metadata and ListOffsets, and freezes the answer into ``OffsetRange``s: every executor
then reads exactly the planned offsets, so a cluster that keeps taking writes still
yields one consistent snapshot per query. The end offset is the high watermark under
read_uncommitted and the last stable offset under read_committed, the bound a consumer
with that isolation level reads up to.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import IsolationLevel, OffsetSpec, TopicPartition
from mirrorsim.client.errors import raise_for_error
from mirrorsim.protocol.messages.mirror_state_records import MIRROR_STATE_TOPIC

# Kafka's own internal topics and KIP-1279's: each cluster writes its own, so they are
# never part of what a mirror copies.
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", MIRROR_STATE_TOPIC})
CLIENT_ID = "mirrorsim-verify"


@dataclass(frozen=True, slots=True)
class PartitionExtent:
    topic: str
    partition: int
    log_start_offset: int
    end_offset: int


@dataclass(frozen=True, slots=True)
class OffsetRange:
    """Offsets [start, end) of one topic partition, read by one Spark task.

    ``overlapping``: the batch that begins below ``start`` and reaches into it belongs to
    this range (true for the first range of a partition unless a pushed-down filter
    excludes it); every other range owns only the batches that begin inside it, so each
    batch lands in exactly one range.
    """

    topic: str
    partition: int
    start: int
    end: int
    overlapping: bool


async def list_extents(
    bootstrap: str,
    *,
    config: Mapping[str, str],
    topic_pattern: str | None,
    keep: Callable[[str, int], bool],
    isolation_level: IsolationLevel,
) -> list[PartitionExtent]:
    """Every matching, non-internal topic partition with its log start and end offset."""
    pattern = re.compile(topic_pattern) if topic_pattern else None
    async with Admin(bootstrap, config=config, client_id=CLIENT_ID) as admin:
        metadata = await admin.cluster.refresh_metadata(None)
        wanted = []
        for name, topic in sorted(metadata.topics.items()):
            if topic.is_internal or name in INTERNAL_TOPICS:
                continue
            if pattern is not None and pattern.fullmatch(name) is None:
                continue
            raise_for_error(topic.error, name)
            wanted.extend(
                TopicPartition(name, number)
                for number in sorted(topic.partitions)
                if keep(name, number)
            )
        if not wanted:
            return []
        earliest = await admin.list_offsets(
            dict.fromkeys(wanted, OffsetSpec.EARLIEST), isolation_level=isolation_level
        )
        latest = await admin.list_offsets(
            dict.fromkeys(wanted, OffsetSpec.LATEST), isolation_level=isolation_level
        )
    return [
        PartitionExtent(tp.topic, tp.partition, earliest[tp].offset, latest[tp].offset)
        for tp in wanted
    ]


def plan_ranges(
    extent: PartitionExtent,
    *,
    start: int | None,
    end: int | None,
    pushed_start: int | None,
    pushed_end: int | None,
    offsets_per_range: int | None,
) -> list[OffsetRange]:
    """Cut what a partition holds within the requested offsets into ranges for tasks.

    ``start``/``end`` are the option range (a batch overlapping ``start`` counts),
    ``pushed_start``/``pushed_end`` the pushed-down filter on the position column (a row
    below ``pushed_start`` never counts).
    """
    low = extent.log_start_offset if start is None else max(extent.log_start_offset, start)
    overlapping = True
    if pushed_start is not None and pushed_start > low:
        low, overlapping = pushed_start, False
    high = min(bound for bound in (extent.end_offset, end, pushed_end) if bound is not None)
    if low >= high:
        return []
    step = high - low if offsets_per_range is None else offsets_per_range
    return [
        OffsetRange(
            extent.topic,
            extent.partition,
            first,
            min(first + step, high),
            overlapping and first == low,
        )
        for first in range(low, high, step)
    ]
