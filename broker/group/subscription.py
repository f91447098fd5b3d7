"""The topics a consumer subscribed to, read from its JoinGroup protocol metadata.

OffsetDelete must refuse to drop offsets of a topic the live group still consumes, and
the coordinator only sees the subscription as opaque bytes of the "consumer" protocol
type. Every ConsumerProtocolSubscription version starts with the same two fields
(version: int16, topics: array of string), so that prefix is all that is read.
"""

from __future__ import annotations

import struct

CONSUMER_PROTOCOL_TYPE = "consumer"

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


def subscribed_topics(metadata: bytes) -> frozenset[str] | None:
    """The subscription's topics, or None when the bytes are not a valid subscription."""
    try:
        offset = _INT16.size
        (count,) = _INT32.unpack_from(metadata, offset)
        offset += _INT32.size
        topics = []
        for _ in range(max(count, 0)):
            (length,) = _INT16.unpack_from(metadata, offset)
            offset += _INT16.size
            if length < 0 or offset + length > len(metadata):
                return None
            topics.append(metadata[offset : offset + length].decode())
            offset += length
    except (struct.error, UnicodeDecodeError):
        return None
    return frozenset(topics)
