"""A cluster's data dir (``mirrorsim up``'s ``data_dir``) as one log per partition.

A cluster data dir holds one broker data dir per broker, ``broker-<id>/``, each with the
replicas that broker hosts. Verification needs one log per partition, so each partition
is read from its longest replica (the highest log end offset; on a tie the lowest broker
id): after a clean stop every in-sync replica has the leader's log, and a replica that
lags or was truncated is never the longer one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from mirrorsim.verify.segments import (
    TopicPartition,
    discover_partitions,
    list_segments,
    read_segment,
)

_BROKER_DIR = re.compile(r"^broker-(?P<id>\d+)$")


@dataclass(frozen=True, slots=True)
class ChosenReplica:
    topic_partition: TopicPartition
    broker_id: int
    path: Path
    log_end_offset: int
    replicas: int


def broker_dirs(data_dir: str | Path) -> dict[int, Path]:
    """The ``broker-<id>`` folders directly under ``data_dir``, by broker id; a folder of
    that name holding segments is partition 1 of a topic named ``broker``, not a broker."""
    found = {}
    for child in Path(data_dir).iterdir():
        match = _BROKER_DIR.match(child.name)
        if match is not None and child.is_dir() and not list_segments(child):
            found[int(match["id"])] = child
    return dict(sorted(found.items()))


def log_end_offset(partition_dir: Path) -> int:
    """The offset after the last complete batch (the base offset of an empty log)."""
    for segment in reversed(list_segments(partition_dir)):
        end = None
        for batch in read_segment(segment.path):
            end = batch.next_offset
        if end is not None:
            return end
    segments = list_segments(partition_dir)
    return segments[0].base_offset if segments else 0


def choose_replicas(data_dir: str | Path, topic_pattern: str | None = None) -> list[ChosenReplica]:
    """One replica per partition of a cluster data dir: the longest, lowest id on a tie."""
    candidates: dict[TopicPartition, list[tuple[int, int, Path]]] = {}
    for broker_id, directory in broker_dirs(data_dir).items():
        for partition_dir in discover_partitions(directory, topic_pattern):
            topic_partition = TopicPartition.parse(partition_dir.name)
            end = log_end_offset(partition_dir)
            candidates.setdefault(topic_partition, []).append((-end, broker_id, partition_dir))
    chosen = []
    for topic_partition, replicas in sorted(candidates.items(), key=lambda item: str(item[0])):
        negative_end, broker_id, path = min(replicas)
        chosen.append(ChosenReplica(topic_partition, broker_id, path, -negative_end, len(replicas)))
    return chosen


def partition_dirs(data_dir: str | Path, topic_pattern: str | None = None) -> Iterator[Path]:
    """The partition folders to read: the chosen replicas of a cluster data dir, or those
    directly under a broker data dir."""
    if broker_dirs(data_dir):
        for replica in choose_replicas(data_dir, topic_pattern):
            yield replica.path
    else:
        yield from discover_partitions(data_dir, topic_pattern)
