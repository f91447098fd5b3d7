"""The value of a ``LastMirrorEpochs`` record (``__mirror_state`` type 1), encoded and
decoded without building a kio entity per partition.

The value holds the last mirror leader epoch of *every* partition of a mirror, and a
failover rewrites it as its partitions stop: at 100,000 partitions each rewrite built
100,000 ``LastMirrorEpochsPartition`` objects to encode (and decoded as many again to
apply the record it had just written), about 1 s a rewrite, most of a large failover.
These two functions write and read the same bytes as kio's ``entity_writer`` and
``tolerant_reader`` for ``LastMirrorEpochsValue`` (a test holds them to it), with
struct packing over plain tuples. The layout (flexible version 0, after the int16 value
version): a compact array of topics, each a compact string name, a compact array of
partitions (int32 index, int32 epoch, tagged fields) and tagged fields; then the value's
tagged fields. Unknown tagged fields are skipped when read, as Kafka skips them.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

from mirrorsim.protocol.messages.mirror_state_records import (
    VALUE_VERSION,
    MirrorStateRecordError,
)
from mirrorsim.protocol.records.varint import encode_unsigned_varint

_PREFIX = struct.Struct(">h")
_PARTITION = struct.Struct(">iiB")
"""One partition with no tagged fields: index, epoch, an empty tagged-field section."""
_INT32_PAIR = struct.Struct(">ii")
_NO_TAGS = b"\x00"

Epochs = dict[tuple[str, int], int]


def encode_last_mirror_epochs(epochs: Mapping[tuple[str, int], int]) -> bytes:
    """The record value (version prefix included) for ``epochs``, topics and partitions
    in sorted order."""
    by_topic: dict[str, list[tuple[int, int]]] = {}
    for (topic, partition), epoch in sorted(epochs.items()):
        by_topic.setdefault(topic, []).append((partition, epoch))
    out = bytearray(_PREFIX.pack(VALUE_VERSION))
    out += encode_unsigned_varint(len(by_topic) + 1)
    pack = _PARTITION.pack
    for topic, partitions in by_topic.items():
        name = topic.encode()
        out += encode_unsigned_varint(len(name) + 1)
        out += name
        out += encode_unsigned_varint(len(partitions) + 1)
        out += b"".join(pack(partition, epoch, 0) for partition, epoch in partitions)
        out += _NO_TAGS
    out += _NO_TAGS
    return bytes(out)


class _Reader:
    """A cursor over the value bytes; every overrun is a ``MirrorStateRecordError``."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            if self.pos >= len(self.data):
                raise MirrorStateRecordError("malformed LastMirrorEpochsValue: truncated varint")
            byte = self.data[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7
            if shift > 28:
                raise MirrorStateRecordError("malformed LastMirrorEpochsValue: varint too long")

    def take(self, size: int) -> bytes:
        end = self.pos + size
        if size < 0 or end > len(self.data):
            raise MirrorStateRecordError(
                f"malformed LastMirrorEpochsValue: {size} bytes wanted at {self.pos} "
                f"of {len(self.data)}"
            )
        chunk = self.data[self.pos : end]
        self.pos = end
        return chunk

    def count(self, what: str) -> int:
        """A compact array's length (null arrays are not allowed here)."""
        encoded = self.uvarint()
        if encoded == 0:
            raise MirrorStateRecordError(f"malformed LastMirrorEpochsValue: null {what}")
        return encoded - 1

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())


def decode_last_mirror_epochs(data: bytes) -> Epochs:
    """The (topic, partition) → epoch map of a record value (version prefix included)."""
    if len(data) < _PREFIX.size:
        raise MirrorStateRecordError(f"value of {len(data)} bytes has no version prefix")
    (version,) = _PREFIX.unpack_from(data, 0)
    if version != VALUE_VERSION:
        raise MirrorStateRecordError(f"unsupported LastMirrorEpochsValue version {version}")
    reader = _Reader(data)
    reader.pos = _PREFIX.size
    epochs: Epochs = {}
    unpack = _INT32_PAIR.unpack_from
    for _ in range(reader.count("topics")):
        length = reader.uvarint()
        if length == 0:
            raise MirrorStateRecordError("malformed LastMirrorEpochsValue: null topic name")
        try:
            topic = reader.take(length - 1).decode()
        except UnicodeDecodeError as exc:
            raise MirrorStateRecordError(f"malformed LastMirrorEpochsValue: {exc}") from None
        for _ in range(reader.count("partitions")):
            partition, epoch = unpack(reader.take(_INT32_PAIR.size))
            if reader.pos < len(data) and data[reader.pos] == 0:
                reader.pos += 1
            else:
                reader.skip_tags()
            epochs[(topic, partition)] = epoch
        reader.skip_tags()
    reader.skip_tags()
    if reader.pos != len(data):
        raise MirrorStateRecordError(
            f"{len(data) - reader.pos} trailing bytes after LastMirrorEpochsValue"
        )
    return epochs
