"""Zig-zag varints as used inside v2 records (protobuf style, 7 bits per byte, LSB first).

Nearly every varint in a record is a small length or delta, so encoding looks sizes up in
a table of pre-encoded one- and two-byte forms and only loops for larger values. Decoding
is inlined by the record reader for the one-byte case; :func:`read_long_varint` finishes
the rest.
"""

from __future__ import annotations

from mirrorsim.protocol.records.raw_batch import CorruptRecordError

_TWO_BYTE_LIMIT = 1 << 14
MAX_VARINT_BYTES = 10


def _encode_unsigned_slow(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_SMALL_UNSIGNED: tuple[bytes, ...] = tuple(
    _encode_unsigned_slow(value) for value in range(_TWO_BYTE_LIMIT)
)


def encode_unsigned_varint(value: int) -> bytes:
    if value < _TWO_BYTE_LIMIT:
        return _SMALL_UNSIGNED[value]
    return _encode_unsigned_slow(value)


def encode_varint(value: int) -> bytes:
    """Zig-zag encode a signed value (Kafka's ``varint``/``varlong``)."""
    zigzag = (value << 1) ^ (value >> 63)
    if 0 <= zigzag < _TWO_BYTE_LIMIT:
        return _SMALL_UNSIGNED[zigzag]
    if not -(1 << 63) <= value < (1 << 63):
        raise ValueError(f"{value} does not fit a varlong")
    return _encode_unsigned_slow(zigzag)


def read_long_varint(buf: bytes, pos: int, first: int) -> tuple[int, int]:
    """Finish an unsigned varint whose first byte ``first`` (>= 0x80) sat at ``pos - 1``.

    Returns the zig-zag value and the position after it. Raises IndexError past the end of
    ``buf``; the record reader turns that into CorruptRecordError.
    """
    value = first & 0x7F
    shift = 7
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift >= 7 * MAX_VARINT_BYTES:
            raise CorruptRecordError("varint longer than 10 bytes")


def read_unsigned_varint(buf: bytes, pos: int) -> tuple[int, int]:
    byte = buf[pos]
    if byte < 0x80:
        return byte, pos + 1
    return read_long_varint(buf, pos + 1, byte)


def zigzag_decode(value: int) -> int:
    return (value >> 1) ^ -(value & 1)
