"""Tolerant decoding of kio-style message classes: unknown tagged fields are skipped.

Kafka lets a peer add tagged fields to a flexible message without bumping its version, and
the receiver must skip the tags it does not know. kio's native reader raises ``KeyError``
instead, and ``ValueError`` on an error code newer than its table. A newer client (or a
mirror-aware peer sending ``MirrorLeaderEpoch``) must not get its connection closed for
that, so :func:`tolerant_reader` tries the native reader first (fast path) and falls back
to :func:`schema_reader`, a pure-Python decoder that walks the dataclass metadata:

- ``kafka_type`` picks the primitive encoding, ``tag`` marks a tagged field;
- ``tuple[X, ...]`` is an array (compact in flexible messages, int32-prefixed otherwise);
- a dataclass type is a nested entity; ``X | None`` makes a string, bytes or array
  nullable, and a nested entity nullable through a leading int8 marker (KIP-893);
- the request header's ``client_id`` is always a legacy nullable string.

Both readers return ``(value, size)`` like kio's readers, so they are interchangeable.
"""

from __future__ import annotations

import datetime
import struct
import types
import typing
import uuid
from collections.abc import Callable
from dataclasses import MISSING, Field, fields, is_dataclass
from functools import cache
from typing import Any, TypeAlias

from kio.schema.errors import ErrorCode as KioErrorCode
from kio.serial import entity_reader

from mirrorsim.protocol.errors import error_code_from_wire

Reader: TypeAlias = Callable[[Any, int], tuple[Any, int]]
"""kio's reader shape: ``(buffer, offset) -> (value, bytes consumed)``."""

_Step: TypeAlias = Callable[[memoryview, int], tuple[Any, int]]
"""Internal shape: ``(view, position) -> (value, new position)``."""


class SchemaDecodeError(ValueError):
    """The bytes do not match the message schema (truncated, bad length, bad text)."""


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def _fixed(fmt: str) -> _Step:
    codec = struct.Struct(fmt)

    def read(view: memoryview, pos: int) -> tuple[Any, int]:
        end = pos + codec.size
        if end > len(view):
            raise SchemaDecodeError(f"need {codec.size} bytes at {pos}, have {len(view) - pos}")
        return codec.unpack_from(view, pos)[0], end

    return read


_read_int8 = _fixed(">b")
_read_int16 = _fixed(">h")
_read_int32 = _fixed(">i")
_read_int64 = _fixed(">q")


def _read_uvarint(view: memoryview, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= len(view):
            raise SchemaDecodeError("truncated unsigned varint")
        byte = view[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise SchemaDecodeError("unsigned varint longer than 10 bytes")


def _read_bool(view: memoryview, pos: int) -> tuple[bool, int]:
    value, pos = _read_int8(view, pos)
    return value != 0, pos


def _read_uuid(view: memoryview, pos: int) -> tuple[uuid.UUID | None, int]:
    end = pos + 16
    if end > len(view):
        raise SchemaDecodeError("truncated uuid")
    raw = bytes(view[pos:end])
    return (None if raw == bytes(16) else uuid.UUID(bytes=raw)), end


def _read_error_code(view: memoryview, pos: int) -> tuple[int, int]:
    value, pos = _read_int16(view, pos)
    try:
        return KioErrorCode(value), pos
    except ValueError:
        return error_code_from_wire(value), pos


def _read_timedelta_i32(view: memoryview, pos: int) -> tuple[datetime.timedelta, int]:
    millis, pos = _read_int32(view, pos)
    return datetime.timedelta(milliseconds=millis), pos


def _read_timedelta_i64(view: memoryview, pos: int) -> tuple[datetime.timedelta, int]:
    millis, pos = _read_int64(view, pos)
    return datetime.timedelta(milliseconds=millis), pos


def _datetime_reader(nullable: bool) -> _Step:
    def read(view: memoryview, pos: int) -> tuple[datetime.datetime | None, int]:
        millis, pos = _read_int64(view, pos)
        if millis == -1 and nullable:
            return None, pos
        if millis < 0:
            raise SchemaDecodeError(f"negative timestamp {millis}")
        return _EPOCH + datetime.timedelta(milliseconds=millis), pos

    return read


def _blob_reader(*, compact: bool, nullable: bool, text: bool) -> _Step:
    """Strings and bytes share one layout: a length (compact: uvarint n+1) then the bytes."""
    legacy_length = _read_int16 if text else _read_int32

    def read(view: memoryview, pos: int) -> tuple[Any, int]:
        if compact:
            length, pos = _read_uvarint(view, pos)
            length -= 1
        else:
            length, pos = legacy_length(view, pos)
        if length < 0:
            if nullable and length == -1:
                return None, pos
            raise SchemaDecodeError(f"invalid length {length} for non-nullable field")
        end = pos + length
        if end > len(view):
            raise SchemaDecodeError(f"length {length} runs past the end of the message")
        raw = bytes(view[pos:end])
        if not text:
            return raw, end
        try:
            return raw.decode("utf-8"), end
        except UnicodeDecodeError as exc:
            raise SchemaDecodeError(f"invalid UTF-8 in string: {exc}") from exc

    return read


_FIXED_READERS: dict[str, _Step] = {
    "int8": _read_int8,
    "int16": _read_int16,
    "int32": _read_int32,
    "int64": _read_int64,
    "uint8": _fixed(">B"),
    "uint16": _fixed(">H"),
    "uint32": _fixed(">I"),
    "uint64": _fixed(">Q"),
    "float64": _fixed(">d"),
    "bool": _read_bool,
    "uuid": _read_uuid,
    "error_code": _read_error_code,
    "timedelta_i32": _read_timedelta_i32,
    "timedelta_i64": _read_timedelta_i64,
}


def _primitive_reader(kafka_type: str, *, flexible: bool, nullable: bool) -> _Step:
    if kafka_type in _FIXED_READERS:
        return _FIXED_READERS[kafka_type]
    if kafka_type == "datetime_i64":
        return _datetime_reader(nullable)
    if kafka_type == "string":
        return _blob_reader(compact=flexible, nullable=nullable, text=True)
    if kafka_type in ("bytes", "records"):
        return _blob_reader(compact=flexible, nullable=nullable, text=False)
    raise TypeError(f"no reader for kafka_type {kafka_type!r}")


def _array_reader(item: _Step, *, compact: bool, nullable: bool) -> _Step:
    def read(view: memoryview, pos: int) -> tuple[tuple[Any, ...] | None, int]:
        if compact:
            count, pos = _read_uvarint(view, pos)
            count -= 1
        else:
            count, pos = _read_int32(view, pos)
        if count < 0:
            if nullable and count == -1:
                return None, pos
            raise SchemaDecodeError(f"invalid array length {count} for non-nullable array")
        if count > len(view) - pos:
            raise SchemaDecodeError(f"array of {count} items cannot fit in the message")
        items = []
        for _ in range(count):
            value, pos = item(view, pos)
            items.append(value)
        return tuple(items), pos

    return read


def _nullable_entity(read_entity: _Step) -> _Step:
    def read(view: memoryview, pos: int) -> tuple[Any, int]:
        marker, pos = _read_int8(view, pos)
        if marker < 0:
            return None, pos
        return read_entity(view, pos)

    return read


def _unwrap_optional(annotation: Any) -> tuple[Any, bool]:
    if typing.get_origin(annotation) in (types.UnionType, typing.Union):
        args = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if len(args) != 1:
            raise TypeError(f"unsupported union {annotation!r}")
        return args[0], True
    return annotation, False


def _field_reader(owner: type, name: str, annotation: Any, metadata: Any, *, tagged: bool) -> _Step:
    flexible = bool(owner.__flexible__)
    inner, nullable = _unwrap_optional(annotation)
    if owner.__name__ == "RequestHeader" and name == "client_id":
        return _blob_reader(compact=False, nullable=True, text=True)
    if typing.get_origin(inner) is tuple:
        item_type = typing.get_args(inner)[0]
        if is_dataclass(item_type):
            item = _entity_step(item_type)
        else:
            item = _primitive_reader(metadata["kafka_type"], flexible=flexible, nullable=False)
        return _array_reader(item, compact=flexible, nullable=nullable)
    if is_dataclass(inner):
        step = _entity_step(inner)
        return _nullable_entity(step) if nullable and not tagged else step
    return _primitive_reader(metadata["kafka_type"], flexible=flexible, nullable=nullable)


_IMPLICIT_DEFAULTS: dict[str, Any] = {
    "bool": False,
    "float64": 0.0,
    "string": "",
    "bytes": b"",
    "uuid": None,
    "timedelta_i32": datetime.timedelta(0),
    "timedelta_i64": datetime.timedelta(0),
}


def _absent_tag_value(field: Field[Any], annotation: Any) -> Any:
    """The value of a tagged field the sender left out: its default, else Kafka's zero value."""
    if field.default is not MISSING:
        return field.default
    inner, nullable = _unwrap_optional(annotation)
    if nullable:
        return None
    if typing.get_origin(inner) is tuple:
        return ()
    if is_dataclass(inner):
        hints = typing.get_type_hints(inner)
        return inner(**{f.name: _absent_tag_value(f, hints[f.name]) for f in fields(inner)})
    kafka_type = field.metadata["kafka_type"]
    return _IMPLICIT_DEFAULTS.get(kafka_type, 0)


@cache
def _entity_step(cls: type) -> _Step:
    hints = typing.get_type_hints(cls)
    regular: list[tuple[str, _Step]] = []
    tagged: dict[int, tuple[str, _Step]] = {}
    absent: dict[str, Any] = {}
    for field in fields(cls):
        tag = field.metadata.get("tag")
        reader = _field_reader(
            cls, field.name, hints[field.name], field.metadata, tagged=tag is not None
        )
        if tag is None:
            regular.append((field.name, reader))
        else:
            tagged[int(tag)] = (field.name, reader)
            absent[field.name] = _absent_tag_value(field, hints[field.name])
    flexible = bool(cls.__flexible__)

    def read(view: memoryview, pos: int) -> tuple[Any, int]:
        values: dict[str, Any] = dict(absent)
        for name, reader in regular:
            values[name], pos = reader(view, pos)
        if flexible:
            pos = _read_tagged_fields(view, pos, tagged, values)
        return cls(**values), pos

    return read


def _read_tagged_fields(
    view: memoryview, pos: int, known: dict[int, tuple[str, _Step]], values: dict[str, Any]
) -> int:
    count, pos = _read_uvarint(view, pos)
    for _ in range(count):
        tag, pos = _read_uvarint(view, pos)
        size, pos = _read_uvarint(view, pos)
        end = pos + size
        if end > len(view):
            raise SchemaDecodeError(f"tagged field {tag} of {size} bytes runs past the end")
        if tag in known:
            name, reader = known[tag]
            values[name], stop = reader(view[:end], pos)
            if stop != end:
                raise SchemaDecodeError(
                    f"tagged field {tag} declared {size} bytes, used {stop - pos}"
                )
        pos = end
    return pos


def schema_reader(cls: type) -> Reader:
    """A pure-Python reader for a kio-style entity class that skips unknown tagged fields."""
    step = _entity_step(cls)

    def read(buffer: Any, offset: int) -> tuple[Any, int]:
        view = memoryview(buffer).cast("B")
        value, end = step(view, offset)
        return value, end - offset

    return read


@cache
def tolerant_reader(cls: type) -> Reader:
    """kio's native reader for ``cls``, falling back to :func:`schema_reader` on failure.

    When both fail, the fallback's exception propagates (chained to the native one), so
    the caller sees why the bytes really are malformed rather than kio's unknown-tag error.
    """
    native = entity_reader(cls)
    fallback = schema_reader(cls)

    def read(buffer: Any, offset: int) -> tuple[Any, int]:
        try:
            return native(buffer, offset)
        except Exception:  # the native reader signals unknown tags and bad data alike
            return fallback(buffer, offset)

    return read
