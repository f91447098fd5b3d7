"""RecordBatch v2: raw batches (header + untouched bytes) and decoded records."""

from mirrorsim.protocol.records.building import build_batch
from mirrorsim.protocol.records.control import (
    ControlRecord,
    ControlRecordType,
    MirrorPidReset,
    TransactionMarker,
    UnknownControlRecord,
    build_control_batch,
    decode_control_batch,
    decode_control_record,
)
from mirrorsim.protocol.records.decoding import DecodedBatch, decode_batch, decode_records
from mirrorsim.protocol.records.raw_batch import (
    HEADER_SIZE,
    Compression,
    CorruptRecordError,
    RawBatch,
    TimestampType,
    iter_batches,
    peek_batch_size,
)
from mirrorsim.protocol.records.record import Header, Headers, Record

__all__ = [
    "HEADER_SIZE",
    "Compression",
    "ControlRecord",
    "ControlRecordType",
    "CorruptRecordError",
    "DecodedBatch",
    "Header",
    "Headers",
    "MirrorPidReset",
    "RawBatch",
    "Record",
    "TimestampType",
    "TransactionMarker",
    "UnknownControlRecord",
    "build_batch",
    "build_control_batch",
    "decode_batch",
    "decode_control_batch",
    "decode_control_record",
    "decode_records",
    "iter_batches",
    "peek_batch_size",
]
