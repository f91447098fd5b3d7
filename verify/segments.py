"""Kafka's on-disk partition layout, read without a broker.

A data dir holds one folder per topic partition, ``<topic>-<partition>``, and each folder
holds segments named by their 20-digit base offset (``00000000000000000000.log``). A
segment covers offsets from its base offset up to the next segment's base offset, which
is what lets a reader skip whole segments for an offset range without opening them.

Batches are read through the memory map of the segment so that a 1 GB segment does not
have to fit in memory twice; a torn tail (a partial last batch) ends the segment, as
Kafka's recovery would truncate it.
"""

from __future__ import annotations

import mmap
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from mirrorsim.protocol.records import RawBatch, iter_batches

LOG_SUFFIX = ".log"
_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
_SEGMENT_NAME = re.compile(r"^(?P<base>\d{20})\.log$")
# Kafka renames a partition folder to `<topic>-<partition>.<uuid>-delete` before deleting
# it, and to `...-future` while moving it between log dirs; neither is live data.
_IGNORED_DIR_SUFFIXES = ("-delete", "-future", "-stray")


@dataclass(frozen=True, slots=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"

    @classmethod
    def parse(cls, text: str) -> TopicPartition:
        """Parse Kafka's `<topic>-<partition>` spelling (topics may contain dashes)."""
        match = _PARTITION_DIR.match(text)
        if match is None:
            raise ValueError(f"not a topic partition: {text!r}")
        return cls(match["topic"], int(match["partition"]))


@dataclass(frozen=True, slots=True)
class Segment:
    """One `.log` file and the offsets it may hold: [base_offset, next_base_offset)."""

    topic_partition: TopicPartition
    path: str
    base_offset: int
    next_base_offset: int | None

    def may_hold(self, start_offset: int | None, end_offset: int | None) -> bool:
        """Whether a batch overlapping [start_offset, end_offset) can live in this segment."""
        if end_offset is not None and self.base_offset >= end_offset:
            return False
        return not (
            start_offset is not None
            and self.next_base_offset is not None
            and self.next_base_offset <= start_offset
        )


def discover_partitions(data_dir: str | Path, topic_pattern: str | None = None) -> list[Path]:
    """Partition folders under ``data_dir`` whose topic fully matches ``topic_pattern``."""
    pattern = re.compile(topic_pattern) if topic_pattern else None
    found = []
    for child in sorted(Path(data_dir).iterdir()):
        if not child.is_dir() or child.name.endswith(_IGNORED_DIR_SUFFIXES):
            continue
        match = _PARTITION_DIR.match(child.name)
        if match is None:
            continue
        if pattern is not None and pattern.fullmatch(match["topic"]) is None:
            continue
        found.append(child)
    return found


def list_segments(partition_dir: str | Path) -> list[Segment]:
    """The segments of one partition in offset order."""
    directory = Path(partition_dir)
    topic_partition = TopicPartition.parse(directory.name)
    bases = sorted(
        (int(match["base"]), entry)
        for entry in directory.iterdir()
        if (match := _SEGMENT_NAME.match(entry.name)) is not None
    )
    segments = []
    for index, (base, path) in enumerate(bases):
        next_base = bases[index + 1][0] if index + 1 < len(bases) else None
        segments.append(Segment(topic_partition, str(path), base, next_base))
    return segments


def read_segment(path: str | Path) -> Iterator[RawBatch]:
    """Every complete batch of one segment, in file order."""
    with open(path, "rb") as file:
        if file.seek(0, 2) == 0:
            return
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            yield from iter_batches(mapped)


def read_batches(
    segment: Segment, start_offset: int | None = None, end_offset: int | None = None
) -> Iterator[RawBatch]:
    """Batches of ``segment`` that hold at least one offset in [start_offset, end_offset)."""
    for batch in read_segment(segment.path):
        if start_offset is not None and batch.last_offset < start_offset:
            continue
        if end_offset is not None and batch.base_offset >= end_offset:
            return
        yield batch
