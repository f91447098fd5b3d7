"""``mirrorsim-kafka``: a Spark data source over a live cluster, read over the Kafka protocol.

    spark.read.format("mirrorsim-kafka")
        .option("bootstrap", "10.0.0.1:9092,10.0.0.2:9092")
        .option("view", "batches")             # or "records"
        .option("topic", "orders|payments")     # regex on the topic name, full match
        .option("startOffset", "100")           # offsets [startOffset, endOffset)
        .option("endOffset", "200")
        .option("isolation", "read_uncommitted")  # or "read_committed"
        .option("maxOffsetsPerTask", "1000000") # split big partitions into offset ranges
        .option("kafka.security.protocol", "SASL_SSL")  # any client property, prefixed
        .load()

It yields the same columns as ``mirrorsim-segments`` (see ``views``), so a live cluster
compares with another live cluster or with a data dir unchanged. The planner lists the
topic partitions and their [log start, end offset) once; each task opens its own client
and fetches its range from the partition leader as raw batches. read_uncommitted is the
default because a mirror copies every batch, committed or not; read_committed stops at
the last stable offset. Filters on ``topic``, ``partition`` and the offset column are
pushed down and applied exactly, as in the segment source.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    CaseInsensitiveDict,
    DataSource,
    DataSourceReader,
    Filter,
    InputPartition,
)
from pyspark.sql.types import StructType

from mirrorsim.client.admin_types import IsolationLevel
from mirrorsim.verify.live_fetch import fetch_range, owned
from mirrorsim.verify.live_partitions import OffsetRange, list_extents, plan_ranges
from mirrorsim.verify.pushdown import Pushdown
from mirrorsim.verify.views import RECORD_VIEWS, VIEW_SCHEMAS, batch_row, chosen_view

FORMAT = "mirrorsim-kafka"
CLIENT_PREFIX = "kafka."
ISOLATION_LEVELS = {
    "read_uncommitted": IsolationLevel.READ_UNCOMMITTED,
    "read_committed": IsolationLevel.READ_COMMITTED,
}


class KafkaInputPartition(InputPartition):
    """One offset range of one topic partition; picklable, as Spark ships it to a task."""

    def __init__(self, offset_range: OffsetRange) -> None:
        super().__init__(offset_range)
        self.range = offset_range


class KafkaDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return VIEW_SCHEMAS[chosen_view(self.options, FORMAT)]

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkaReader(self.options)


class KafkaReader(DataSourceReader):
    def __init__(self, options: Mapping[str, str]) -> None:
        options = CaseInsensitiveDict(options)
        if not options.get("bootstrap"):
            raise ValueError(f"{FORMAT} needs the 'bootstrap' option (host:port,...)")
        self.bootstrap = options["bootstrap"]
        self.view = chosen_view(options, FORMAT)
        self.topic_pattern = options.get("topic")
        self.start_offset = _int_option(options, "startOffset")
        self.end_offset = _int_option(options, "endOffset")
        self.offsets_per_task = _int_option(options, "maxOffsetsPerTask")
        if self.offsets_per_task is not None and self.offsets_per_task <= 0:
            raise ValueError(f"{FORMAT} maxOffsetsPerTask must be positive")
        self.isolation_level = _isolation(options)
        self.config = {
            key[len(CLIENT_PREFIX) :]: value
            for key, value in options.items()
            if key.startswith(CLIENT_PREFIX)
        }
        self.pushdown = Pushdown("offset" if self.view in RECORD_VIEWS else "base_offset")

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        return [flt for flt in filters if not self.pushdown.accept(flt)]

    def partitions(self) -> Sequence[InputPartition]:
        extents = asyncio.run(
            list_extents(
                self.bootstrap,
                config=self.config,
                topic_pattern=self.topic_pattern,
                keep=self.pushdown.keeps_partition,
                isolation_level=self.isolation_level,
            )
        )
        return [
            KafkaInputPartition(offset_range)
            for extent in extents
            for offset_range in plan_ranges(
                extent,
                start=self.start_offset,
                end=self.end_offset,
                pushed_start=self.pushdown.start_offset,
                pushed_end=self.pushdown.end_offset,
                offsets_per_range=self.offsets_per_task,
            )
        ]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...] | pa.RecordBatch]:
        assert isinstance(partition, KafkaInputPartition)
        offset_range = partition.range
        batches = fetch_range(
            self.bootstrap,
            offset_range,
            config=self.config,
            isolation_level=self.isolation_level,
        )
        topic, number = offset_range.topic, offset_range.partition
        if self.view in RECORD_VIEWS:
            yield from RECORD_VIEWS[self.view](
                topic, number, batches, offset_range.start, offset_range.end
            )
            return
        for batch in batches:
            if owned(batch, offset_range):
                yield batch_row(topic, number, batch)


def _isolation(options: Mapping[str, str]) -> IsolationLevel:
    name = options.get("isolation", "read_uncommitted").lower()
    if name not in ISOLATION_LEVELS:
        raise ValueError(
            f"{FORMAT} isolation must be one of {', '.join(ISOLATION_LEVELS)}, not {name!r}"
        )
    return ISOLATION_LEVELS[name]


def _int_option(options: Mapping[str, str], name: str) -> int | None:
    value = options.get(name)
    return None if value is None else int(value)
