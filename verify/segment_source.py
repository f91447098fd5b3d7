"""``mirrorsim-segments``: a Spark data source over a data dir in Kafka's layout.

    spark.read.format("mirrorsim-segments")
        .option("path", "/data/primary/broker-1")   # or a cluster's /data/primary
        .option("view", "batches")          # or "records"
        .option("topic", "orders|payments")  # regex on the topic name, full match
        .option("startOffset", "100")        # offsets [startOffset, endOffset)
        .option("endOffset", "200")
        .load()

Each Spark input partition is one segment of one topic partition, so a partition with
many segments is read in parallel and an offset range opens only the segments that can
hold it. Given a cluster data dir (``broker-<id>/`` folders), each partition is read
from its longest replica (``replicas.py``). Filters on ``topic``, ``partition`` and the
offset column (``base_offset`` in the batch view, ``offset`` in the record view) are
pushed down.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, Filter, InputPartition
from pyspark.sql.types import StructType

from mirrorsim.verify.pushdown import Pushdown
from mirrorsim.verify.replicas import partition_dirs
from mirrorsim.verify.segments import Segment, list_segments, read_batches
from mirrorsim.verify.views import RECORD_VIEWS, VIEW_SCHEMAS, batch_row, chosen_view

FORMAT = "mirrorsim-segments"


class SegmentInputPartition(InputPartition):
    """One segment to read; picklable, as Spark ships it to an executor."""

    def __init__(self, segment: Segment) -> None:
        super().__init__(segment)
        self.segment = segment


class SegmentDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return VIEW_SCHEMAS[chosen_view(self.options, FORMAT)]

    def reader(self, schema: StructType) -> DataSourceReader:
        return SegmentReader(self.options)


class SegmentReader(DataSourceReader):
    def __init__(self, options: dict[str, str]) -> None:
        if "path" not in options:
            raise ValueError(f"{FORMAT} needs the 'path' option (a data dir)")
        self.path = options["path"]
        self.view = chosen_view(options, FORMAT)
        self.topic_pattern = options.get("topic")
        self.start_offset = _offset_option(options, "startOffset")
        self.end_offset = _offset_option(options, "endOffset")
        offset_column = "offset" if self.view in RECORD_VIEWS else "base_offset"
        self.pushdown = Pushdown(offset_column)

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        return [flt for flt in filters if not self.pushdown.accept(flt)]

    def partitions(self) -> Sequence[InputPartition]:
        start, end = self._segment_range()
        partitions = []
        for directory in partition_dirs(self.path, self.topic_pattern):
            segments = list_segments(directory)
            for segment in segments:
                topic_partition = segment.topic_partition
                if self.pushdown.keeps_partition(
                    topic_partition.topic, topic_partition.partition
                ) and segment.may_hold(start, end):
                    partitions.append(SegmentInputPartition(segment))
        return partitions

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...] | pa.RecordBatch]:
        assert isinstance(partition, SegmentInputPartition)
        segment = partition.segment
        topic = segment.topic_partition.topic
        number = segment.topic_partition.partition
        start, end = self._segment_range()
        if self.view in RECORD_VIEWS:
            yield from RECORD_VIEWS[self.view](
                topic, number, read_batches(segment, start, end), start, end
            )
            return
        for batch in read_batches(segment, self.start_offset, self.end_offset):
            if _within(batch.base_offset, self.pushdown.start_offset, self.pushdown.end_offset):
                yield batch_row(topic, number, batch)

    def _segment_range(self) -> tuple[int | None, int | None]:
        """The offsets any row can come from: the option range within the pushed range."""
        return (
            _tightest(max, self.start_offset, self.pushdown.start_offset),
            _tightest(min, self.end_offset, self.pushdown.end_offset),
        )


def _offset_option(options: dict[str, str], name: str) -> int | None:
    value = options.get(name)
    return None if value is None else int(value)


def _tightest(pick: Any, first: int | None, second: int | None) -> int | None:
    if first is None:
        return second
    if second is None:
        return first
    return pick(first, second)


def _within(offset: int, start: int | None, end: int | None) -> bool:
    return (start is None or offset >= start) and (end is None or offset < end)
