"""Typed log errors. Each carries Kafka's error code so a handler can answer with it;
the log itself never builds responses."""

from __future__ import annotations


class LogError(Exception):
    error_code: int = -1


class OffsetOutOfRangeError(LogError):
    error_code = 1

    def __init__(self, offset: int, log_start_offset: int, log_end_offset: int) -> None:
        super().__init__(f"offset {offset} is outside [{log_start_offset}, {log_end_offset}]")
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


class CorruptRecordError(LogError):
    error_code = 2


class RecordTooLargeError(LogError):
    """A batch larger than max.message.bytes (MESSAGE_TOO_LARGE)."""

    error_code = 10


class RecordBatchTooLargeError(LogError):
    """A batch that cannot fit even into an empty segment (RECORD_LIST_TOO_LARGE)."""

    error_code = 18


class InvalidRecordError(LogError):
    """A record the topic's policy refuses, e.g. a keyless record on a compacted topic.

    ``record_errors`` names the refused records by their index in the batch with why
    (Kafka's KIP-467 ``RecordErrors``), so a client fails only those records."""

    error_code = 87

    def __init__(self, message: str, record_errors: tuple[tuple[int, str], ...] = ()) -> None:
        super().__init__(message)
        self.record_errors = record_errors


class OutOfOrderSequenceError(LogError):
    error_code = 45


class DuplicateSequenceError(LogError):
    """The batch was appended before; the broker answers with the original offsets."""

    error_code = 46

    def __init__(self, producer_id: int, first_offset: int, last_offset: int) -> None:
        super().__init__(
            f"duplicate batch from producer {producer_id}, "
            f"originally at offsets {first_offset}..{last_offset}"
        )
        self.producer_id = producer_id
        self.first_offset = first_offset
        self.last_offset = last_offset


class InvalidProducerEpochError(LogError):
    """The producer was fenced by a newer epoch of the same producer id."""

    error_code = 47


class InvalidTxnStateError(LogError):
    error_code = 48


class NonContiguousAppendError(LogError):
    """A follower append that would overlap the log or leave a gap it was not allowed."""

    error_code = 2


class StorageError(LogError):
    """A log file could not be opened or written, e.g. the process is out of descriptors
    (KAFKA_STORAGE_ERROR): the request fails, the log stays as it was."""

    error_code = 56
