"""The offsets side of ``mirrorsim groups``: lag rows and offset resets, as
kafka-consumer-groups.sh computes them.

Pure functions over offsets already read from the cluster, so the rules (which partitions
a describe lists, how a reset target is clamped) are tested without one.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from mirrorsim.client.admin_types import TopicPartition


@dataclass(frozen=True, slots=True)
class LagRow:
    partition: TopicPartition
    current: int | None
    """The committed offset; None for an assigned partition without a commit."""
    log_end: int
    owner: str | None
    """The member the partition is assigned to (its member id), None when unassigned."""

    @property
    def lag(self) -> int | None:
        return None if self.current is None else max(0, self.log_end - self.current)


def lag_rows(
    committed: Mapping[TopicPartition, int],
    log_ends: Mapping[TopicPartition, int],
    owners: Mapping[TopicPartition, str],
) -> list[LagRow]:
    """One row per partition that is committed or assigned, sorted by topic and partition."""
    partitions = sorted(set(committed) | set(owners), key=lambda tp: (tp.topic, tp.partition))
    return [
        LagRow(tp, committed.get(tp), log_ends.get(tp, -1), owners.get(tp)) for tp in partitions
    ]


@dataclass(frozen=True, slots=True)
class ResetTarget:
    """One of kafka-consumer-groups.sh's reset scenarios."""

    kind: str
    """``earliest``, ``latest``, ``offset``, ``shift`` or ``datetime``."""
    value: int = 0
    """The offset (``offset``), the shift (``shift``) or the time in ms (``datetime``)."""


def parse_datetime(text: str) -> int:
    """``--to-datetime``'s ISO-8601 text (``YYYY-MM-DDTHH:mm:SS.sss``, an optional zone;
    none means UTC, as Kafka's tool reads a local time on a UTC host) in epoch ms."""
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"Error parsing timestamp '{text}': expected YYYY-MM-DDTHH:mm:SS.sss"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return int(moment.timestamp() * 1000)


def plan_reset(
    target: ResetTarget,
    partitions: Iterable[TopicPartition],
    committed: Mapping[TopicPartition, int],
    earliest: Mapping[TopicPartition, int],
    latest: Mapping[TopicPartition, int],
    by_time: Mapping[TopicPartition, int] | None = None,
) -> dict[TopicPartition, int]:
    """The new offset of each partition.

    As in Kafka, an explicit offset or a shift lands inside [earliest, latest] (a target
    below the log start is the log start, one past the end is the end); a shift starts
    from the committed offset, or from the latest offset without one; a time with no
    record at or after it resets to the end.
    """
    plan = {}
    for tp in partitions:
        low, high = earliest[tp], latest[tp]
        if target.kind == "earliest":
            offset = low
        elif target.kind == "latest":
            offset = high
        elif target.kind == "offset":
            offset = target.value
        elif target.kind == "shift":
            offset = committed.get(tp, high) + target.value
        elif target.kind == "datetime":
            found = (by_time or {}).get(tp, -1)
            offset = high if found < 0 else found
        else:
            raise ValueError(f"unknown reset scenario {target.kind}")
        plan[tp] = min(max(offset, low), high)
    return plan
