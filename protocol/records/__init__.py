"""RecordBatch v2: raw batches (header + untouched bytes) and decoded records."""

from mirrorsim.protocol.records.raw_batch import (
    HEADER_SIZE,
    Compression,
    CorruptRecordError,
    RawBatch,
    TimestampType,
    iter_batches,
    peek_batch_size,
)

__all__ = [
    "HEADER_SIZE",
    "Compression",
    "CorruptRecordError",
    "RawBatch",
    "TimestampType",
    "iter_batches",
    "peek_batch_size",
]
