"""Partition storage in Kafka's on-disk layout (Kafka's ``UnifiedLog`` vocabulary)."""

from mirrorsim.broker.log.config import LogConfig
from mirrorsim.broker.log.epoch_cache import EpochEntry, LeaderEpochFileCache
from mirrorsim.broker.log.errors import (
    CorruptRecordError,
    DuplicateSequenceError,
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTxnStateError,
    LogError,
    NonContiguousAppendError,
    OffsetOutOfRangeError,
    OutOfOrderSequenceError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
)
from mirrorsim.broker.log.log_manager import LogManager
from mirrorsim.broker.log.partition_log import PartitionLog
from mirrorsim.broker.log.producer_state import ProducerStateManager
from mirrorsim.broker.log.results import (
    AppendInfo,
    AppendOrigin,
    CompactionStats,
    ReadResult,
    TimestampOffset,
)
from mirrorsim.broker.log.txn_index import AbortedTxn

__all__ = [
    "AbortedTxn",
    "AppendInfo",
    "AppendOrigin",
    "CompactionStats",
    "CorruptRecordError",
    "DuplicateSequenceError",
    "EpochEntry",
    "InvalidProducerEpochError",
    "InvalidRecordError",
    "InvalidTxnStateError",
    "LeaderEpochFileCache",
    "LogConfig",
    "LogError",
    "LogManager",
    "NonContiguousAppendError",
    "OffsetOutOfRangeError",
    "OutOfOrderSequenceError",
    "PartitionLog",
    "ProducerStateManager",
    "ReadResult",
    "RecordBatchTooLargeError",
    "RecordTooLargeError",
    "TimestampOffset",
]
