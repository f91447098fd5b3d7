"""The lines ``mirrorsim dump-log`` prints, in kafka-dump-log.sh's exact wording and field
order, from the bytes of a segment's ``.log``, ``.index`` or ``.timeindex`` file.

Record lines are printed when the records are iterated (--deep-iteration, or a decoder:
--print-data-log, --mirror-state-decoder). Control records always decode (COMMIT/ABORT
markers with their coordinator epoch, MIRROR_PID_RESET with its source cluster id); other
records show key and payload through the chosen decoder: UTF-8 text, or the JSON form of
``__mirror_state`` keys and values (``{"type":"3","data":{...}}``).
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
import re
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from mirrorsim.protocol.messages.mirror_state_records import (
    MirrorStateRecordError,
    decode_mirror_state_key,
    decode_mirror_state_value,
    record_type_of,
)
from mirrorsim.protocol.records import (
    ControlRecordType,
    CorruptRecordError,
    MirrorPidReset,
    RawBatch,
    Record,
    TimestampType,
    TransactionMarker,
    UnknownControlRecord,
    decode_control_record,
    decode_records,
    peek_batch_size,
)
from mirrorsim.protocol.records.raw_batch import HEADER_SIZE, NO_SEQUENCE

OFFSET_INDEX_ENTRY_SIZE = 8
TIME_INDEX_ENTRY_SIZE = 12
TIMESTAMP_TYPE_NAMES = {
    TimestampType.CREATE_TIME: "CreateTime",
    TimestampType.LOG_APPEND_TIME: "LogAppendTime",
}

KeyAndPayload = tuple[str | None, str | None]
RecordParser = Callable[[Record], KeyAndPayload]


class Decoder(enum.Enum):
    NONE = "none"
    TEXT = "text"
    MIRROR_STATE = "mirror-state"


def base_offset_of(file_name: str) -> int:
    """Kafka names segment files after their base offset (20 digits)."""
    stem = file_name.split(".", 1)[0]
    return int(stem) if stem.isdigit() else 0


def dump_log(
    data: bytes,
    *,
    base_offset: int,
    decoder: Decoder,
    deep: bool,
    max_bytes: int | None = None,
    skip_record_metadata: bool = False,
) -> Iterator[str]:
    """kafka-dump-log.sh's lines for a ``.log`` file. With ``max_bytes`` only the batches
    within the first ``max_bytes`` bytes are read, and (as in Kafka) the trailing-bytes
    warning is left out unless the limit covers the whole file."""
    yield f"Log starting offset: {base_offset}"
    limit = len(data) if max_bytes is None else min(max_bytes, len(data))
    position = 0
    while position < limit:
        size = peek_batch_size(data, position)
        if size is None or size < HEADER_SIZE or position + size > limit:
            break
        try:
            batch = RawBatch.from_bytes(data[position : position + size])
        except CorruptRecordError:
            break
        yield batch_line(batch, position)
        if deep or decoder is not Decoder.NONE:
            yield from record_lines(batch, decoder, skip_metadata=skip_record_metadata)
        position += size
    if position < len(data) and limit == len(data):
        yield f"Found {len(data) - position} invalid bytes at the end of the file"


def batch_line(batch: RawBatch, position: int) -> str:
    horizon = (
        f"OptionalLong[{batch.base_timestamp}]"
        if batch.has_delete_horizon
        else "OptionalLong.empty"
    )
    return (
        f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} "
        f"count: {batch.records_count} baseSequence: {batch.base_sequence} "
        f"lastSequence: {batch.last_sequence} producerId: {batch.producer_id} "
        f"producerEpoch: {batch.producer_epoch} "
        f"partitionLeaderEpoch: {batch.partition_leader_epoch} "
        f"isTransactional: {_bool(batch.is_transactional)} isControl: {_bool(batch.is_control)} "
        f"deleteHorizonMs: {horizon} position: {position} "
        f"{TIMESTAMP_TYPE_NAMES[batch.timestamp_type]}: {batch.max_timestamp} "
        f"size: {batch.size} magic: {batch.magic} "
        f"compresscodec: {batch.compression.name.lower()} crc: {batch.crc} "
        f"isvalid: {_bool(batch.is_valid())}"
    )


def record_lines(
    batch: RawBatch, decoder: Decoder, *, skip_metadata: bool = False
) -> Iterator[str]:
    """One line per record; ``skip_metadata`` leaves only the control text or the key and
    payload (Kafka's ``--skip-record-metadata``)."""
    try:
        records = decode_records(batch)
    except CorruptRecordError as exc:
        yield f"| cannot decode the records of this batch: {exc}"
        return
    parser = PARSERS[decoder]
    timestamp_name = TIMESTAMP_TYPE_NAMES[batch.timestamp_type]
    for record in records:
        line = (
            ""
            if skip_metadata
            else f"| offset: {record.offset} {timestamp_name}: {record.timestamp} "
            f"keySize: {_size(record.key)} valueSize: {_size(record.value)} "
            f"sequence: {_sequence(batch, record)} "
            f"headerKeys: [{','.join(name for name, _ in record.headers)}]"
        )
        if batch.is_control:
            line += " " + control_text(record)
        elif decoder is not Decoder.NONE:
            key, payload = parser(record)
            if key is not None:
                line += f" key: {key}"
            if payload is not None:
                line += f" payload: {payload}"
        yield line


def control_text(record: Record) -> str:
    try:
        control = decode_control_record(record)
    except CorruptRecordError as exc:
        return f"controlType: <invalid: {exc}>"
    if isinstance(control, TransactionMarker):
        return f"endTxnMarker: {control.kind.name} coordinatorEpoch: {control.coordinator_epoch}"
    if isinstance(control, MirrorPidReset):
        kind = ControlRecordType.MIRROR_PID_RESET
        return (
            f"controlType: {kind.name}({kind.value}) sourceClusterId: {control.source_cluster_id}"
        )
    assert isinstance(control, UnknownControlRecord)
    try:
        name = ControlRecordType(control.type_id).name
    except ValueError:
        name = "UNKNOWN"
    return f"controlType: {name}({control.type_id})"


def text_parser(record: Record) -> KeyAndPayload:
    return _text(record.key), _text(record.value)


def mirror_state_parser(record: Record) -> KeyAndPayload:
    """Key and payload as the spec's sample prints them; a tombstone's payload is <DELETE>."""
    if record.key is None:
        return None, _text(record.value)
    try:
        key = decode_mirror_state_key(record.key)
        record_type = record_type_of(key)
        key_json = _json({"type": str(record_type), "data": _camel_case(key)})
        if record.value is None:
            return key_json, "<DELETE>"
        value = decode_mirror_state_value(record_type, record.value)
    except MirrorStateRecordError as exc:
        return f"<invalid __mirror_state record: {exc}>", _text(record.value)
    version = int.from_bytes(record.value[:2], "big", signed=True)
    return key_json, _json({"version": str(version), "data": _camel_case(value)})


PARSERS: dict[Decoder, RecordParser] = {
    Decoder.NONE: text_parser,
    Decoder.TEXT: text_parser,
    Decoder.MIRROR_STATE: mirror_state_parser,
}


def dump_offset_index(data: bytes, *, base_offset: int) -> Iterator[str]:
    """``offset: N position: P`` per entry; a zero entry after the first ends the index
    (Kafka preallocates index files with zeros)."""
    for i in range(len(data) // OFFSET_INDEX_ENTRY_SIZE):
        entry = data[i * OFFSET_INDEX_ENTRY_SIZE : (i + 1) * OFFSET_INDEX_ENTRY_SIZE]
        relative = int.from_bytes(entry[:4], "big", signed=True)
        position = int.from_bytes(entry[4:], "big", signed=True)
        if i > 0 and relative == 0 and position == 0:
            break
        yield f"offset: {base_offset + relative} position: {position}"


def dump_time_index(data: bytes, *, base_offset: int) -> Iterator[str]:
    for i in range(len(data) // TIME_INDEX_ENTRY_SIZE):
        entry = data[i * TIME_INDEX_ENTRY_SIZE : (i + 1) * TIME_INDEX_ENTRY_SIZE]
        timestamp = int.from_bytes(entry[:8], "big", signed=True)
        relative = int.from_bytes(entry[8:], "big", signed=True)
        if i > 0 and timestamp == 0 and relative == 0:
            break
        yield f"timestamp: {timestamp} offset: {base_offset + relative}"


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _size(value: bytes | None) -> int:
    return -1 if value is None else len(value)


def _sequence(batch: RawBatch, record: Record) -> int:
    if batch.base_sequence == NO_SEQUENCE:
        return NO_SEQUENCE
    return (batch.base_sequence + record.offset - batch.base_offset) & 0x7FFFFFFF


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode("utf-8", errors="replace")


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _camel_case(value: Any) -> Any:
    """Kafka's JSON converters name fields in lowerCamelCase, as in the message schemas,
    and print a Uuid as Kafka's ``Uuid.toString`` does (URL-safe base64, unpadded)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            _camel(f.name): _camel_case(getattr(value, f.name)) for f in dataclasses.fields(value)
        }
    if isinstance(value, tuple | list):
        return [_camel_case(item) for item in value]
    if isinstance(value, int):
        return int(value)
    if isinstance(value, uuid.UUID):
        return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")
    return value


def _camel(name: str) -> str:
    return re.sub(r"_([a-z0-9])", lambda m: m.group(1).upper(), name)
