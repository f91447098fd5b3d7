"""Produce-side checks on record batches that need only the batch header.

Kafka validates a produced batch in three places (``ProduceRequest.validateRecords``,
``UnifiedLog.analyzeAndValidateRecords``, ``LogValidator``). The log (``PartitionLog``)
checks size against ``max.message.bytes`` and ``segment.bytes``, the CRC, control batches
from clients and keyless records on compacted topics, and stamps LogAppendTime. The rest,
in Kafka's order and with Kafka's error codes, is here:

1. the request: magic 2 and exactly one batch per partition (INVALID_RECORD), parseable
   lengths (CORRUPT_MESSAGE);
2. the batch: base offset 0 from clients, a consistent offset range and record count,
   sequence numbers with producer ids, transactional batches carrying a producer id
   (INVALID_RECORD);
3. timestamps (CreateTime only) within ``message.timestamp.before/after.max.ms``
   (INVALID_TIMESTAMP), checked on the batch's first and largest timestamps.

Per-record checks that would need decompression (Kafka's record-level offset deltas and
per-record timestamps) are not done: the data path never inflates a batch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.records.raw_batch import (
    MAGIC_V2,
    CorruptRecordError,
    RawBatch,
    iter_batches,
)

LONG_MAX = 2**63 - 1
_MAGIC_AT = 16


@dataclass(frozen=True, slots=True)
class TimestampPolicy:
    """The topic configs that bound a produced batch's CreateTime timestamps."""

    log_append_time: bool = False
    before_max_ms: int = LONG_MAX
    after_max_ms: int = LONG_MAX

    @classmethod
    def from_topic_config(cls, configs: Mapping[str, str]) -> TimestampPolicy:
        return cls(
            log_append_time=configs.get("message.timestamp.type") == "LogAppendTime",
            before_max_ms=int(configs.get("message.timestamp.before.max.ms", LONG_MAX)),
            after_max_ms=int(configs.get("message.timestamp.after.max.ms", LONG_MAX)),
        )


def invalid_record(message: str) -> KafkaError:
    return KafkaError(ErrorCode.INVALID_RECORD, message)


def split_produced_batches(records: bytes) -> list[RawBatch]:
    """The batches of one partition's Produce ``records``; Kafka allows exactly one."""
    if len(records) > _MAGIC_AT and records[_MAGIC_AT] != MAGIC_V2:
        raise invalid_record(
            f"Produce requests are only allowed to contain record batches with magic "
            f"version 2, found {records[_MAGIC_AT]}"
        )
    try:
        batches = list(iter_batches(records, allow_partial_tail=False))
    except CorruptRecordError as exc:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, str(exc)) from exc
    if len(batches) != 1:
        raise invalid_record(
            f"Produce requests are only allowed to contain exactly one record batch, "
            f"found {len(batches)}"
        )
    return batches


def validate_client_batches(
    batches: list[RawBatch], policy: TimestampPolicy, now_ms: int
) -> list[RawBatch]:
    """Raise KafkaError for a batch Kafka would refuse; the batches otherwise."""
    for batch in batches:
        _check_header(batch)
        if not policy.log_append_time:
            _check_timestamps(batch, policy, now_ms)
    return batches


def _check_header(batch: RawBatch) -> None:
    if batch.base_offset != 0:
        raise invalid_record(
            f"The baseOffset of the record batch in the append should be 0, "
            f"found {batch.base_offset}"
        )
    if batch.last_offset_delta < 0 or batch.records_count <= 0:
        raise invalid_record("Batch has an invalid offset range or record count")
    if batch.records_count != batch.last_offset_delta + 1:
        raise invalid_record(
            f"Inconsistent batch offset range [0, {batch.last_offset_delta}] "
            f"and record count {batch.records_count}"
        )
    if batch.has_producer_id and batch.base_sequence < 0:
        raise invalid_record(f"Invalid sequence number {batch.base_sequence} in batch")
    if batch.is_transactional and not batch.has_producer_id:
        raise invalid_record("Transactional batches must carry a producer id")


def _check_timestamps(batch: RawBatch, policy: TimestampPolicy, now_ms: int) -> None:
    for timestamp in (batch.base_timestamp, batch.max_timestamp):
        if timestamp < 0:
            continue
        if now_ms - timestamp > policy.before_max_ms or timestamp - now_ms > policy.after_max_ms:
            raise KafkaError(
                ErrorCode.INVALID_TIMESTAMP,
                f"Timestamp {timestamp} of the batch is out of range: it must be within "
                f"[now - {policy.before_max_ms}, now + {policy.after_max_ms}] (now = {now_ms})",
            )
