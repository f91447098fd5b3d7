"""The few Kafka wire forms the hand-written response encoders share.

Legacy (non-flexible) versions count arrays with an int32 and strings with an int16;
flexible versions store a compact length + 1 as an unsigned varint, 0 meaning null, and
end every struct with a tagged-field section (a single 0 when it holds none).
"""

from __future__ import annotations

import struct
import uuid

from mirrorsim.protocol.records.varint import encode_unsigned_varint

INT32 = struct.Struct(">i")
INT16 = struct.Struct(">h")
NO_TAGGED_FIELDS = b"\x00"
_NULL_COMPACT = b"\x00"
_NULL_LEGACY_STRING = INT16.pack(-1)


def array_length(count: int, flexible: bool) -> bytes:
    """An array's length, -1 for null."""
    return encode_unsigned_varint(count + 1) if flexible else INT32.pack(count)


def nullable_string(value: str | None, flexible: bool) -> bytes:
    if value is None:
        return _NULL_COMPACT if flexible else _NULL_LEGACY_STRING
    data = value.encode()
    if flexible:
        return encode_unsigned_varint(len(data) + 1) + data
    return INT16.pack(len(data)) + data


def topic_id_bytes(topic_id: uuid.UUID | None) -> bytes:
    """A topic id, the zero uuid for none."""
    return (topic_id or uuid.UUID(int=0)).bytes


def topic_reference(
    name: str | None, topic_id: uuid.UUID | None, by_id: bool, flexible: bool
) -> bytes:
    """A topic as a message names it: by id in the versions that have topic ids, else by
    name."""
    return topic_id_bytes(topic_id) if by_id else nullable_string(name, flexible)
