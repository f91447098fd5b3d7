"""The two views of a partition log as Spark rows: one row per batch, or one per record.

The batch view is what convergence is proven on: mirroring copies batches byte for byte,
so equal fingerprints (a digest of the whole batch, base offset and leader epoch
included) mean equal logs. ``crc_valid`` recomputes the CRC32C so a corrupted byte is
told apart from a batch that was legitimately written differently.

The record view decodes batches (decompressing them) and exists to say which record
differs and to check what a committed consumer offset points at.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa

from mirrorsim.protocol.records import RawBatch, decode_records

BATCH_SCHEMA = (
    "topic string, partition int, base_offset long, last_offset long, leader_epoch int, "
    "crc long, crc_valid boolean, producer_id long, producer_epoch int, base_sequence int, "
    "is_control boolean, is_transactional boolean, compression string, size int, "
    "first_timestamp long, max_timestamp long, records_count int, fingerprint binary"
)
RECORD_SCHEMA = (
    "topic string, partition int, offset long, timestamp long, key binary, value binary, "
    "headers array<struct<key: string, value: binary>>"
)
FINGERPRINT_SIZE = 16
# Rows per Arrow batch handed to Spark: big enough to amortize the conversion per call,
# small enough to keep a task's memory flat.
ARROW_BATCH_ROWS = 4096


def fingerprint(data: bytes) -> bytes:
    """A digest of the exact batch bytes; collisions would need an adversary, not a bug."""
    return hashlib.blake2b(data, digest_size=FINGERPRINT_SIZE).digest()


def batch_row(topic: str, partition: int, batch: RawBatch) -> tuple[Any, ...]:
    """One batch as a tuple in ``BATCH_SCHEMA`` order."""
    return (
        topic,
        partition,
        batch.base_offset,
        batch.last_offset,
        batch.partition_leader_epoch,
        batch.crc,
        batch.is_valid(),
        batch.producer_id,
        batch.producer_epoch,
        batch.base_sequence,
        batch.is_control,
        batch.is_transactional,
        batch.compression.name.lower(),
        batch.size,
        batch.base_timestamp,
        batch.max_timestamp,
        batch.records_count,
        fingerprint(batch.data),
    )


def record_rows(
    topic: str,
    partition: int,
    batch: RawBatch,
    start_offset: int | None = None,
    end_offset: int | None = None,
) -> Iterator[tuple[Any, ...]]:
    """The records of one batch in [start_offset, end_offset) in ``RECORD_SCHEMA`` order."""
    for record in decode_records(batch):
        if start_offset is not None and record.offset < start_offset:
            continue
        if end_offset is not None and record.offset >= end_offset:
            return
        yield (
            topic,
            partition,
            record.offset,
            record.timestamp,
            record.key,
            record.value,
            list(record.headers),
        )


def record_arrow_batches(
    topic: str,
    partition: int,
    batches: Iterable[RawBatch],
    start_offset: int | None = None,
    end_offset: int | None = None,
) -> Iterator[pa.RecordBatch]:
    """The record view as Arrow batches: records are many and small, and handing Spark
    columns instead of tuples skips a per-row conversion."""
    columns: list[list[Any]] = [[] for _ in _RECORD_ARROW_SCHEMA]
    for batch in batches:
        for row in record_rows(topic, partition, batch, start_offset, end_offset):
            for column, value in zip(columns, row, strict=True):
                column.append(value)
            if len(columns[0]) == ARROW_BATCH_ROWS:
                yield _arrow_batch(columns)
                columns = [[] for _ in _RECORD_ARROW_SCHEMA]
    if columns[0]:
        yield _arrow_batch(columns)


_RECORD_ARROW_SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.int64()),
        ("key", pa.binary()),
        ("value", pa.binary()),
        (
            "headers",
            pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])),
        ),
    ]
)


def _arrow_batch(columns: list[list[Any]]) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [
            pa.array(values, type=field.type)
            for values, field in zip(columns, _RECORD_ARROW_SCHEMA, strict=True)
        ],
        schema=_RECORD_ARROW_SCHEMA,
    )


BATCHES = "batches"
RECORDS = "records"


def chosen_view(options: Any, source_name: str) -> str:
    """The ``view`` option of a mirrorsim data source: ``batches`` (default) or ``records``."""
    view = str(options.get("view", BATCHES)).lower()
    if view not in (BATCHES, RECORDS):
        raise ValueError(f"{source_name} view must be '{BATCHES}' or '{RECORDS}', not {view!r}")
    return view
