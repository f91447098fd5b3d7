"""Decode a classic group member's assignment (ConsumerProtocolAssignment) for display.

DescribeGroups hands the leader's assignment back as opaque bytes; for the `consumer`
protocol type every version starts with version (int16) and an array of (topic: string,
partitions: array of int32), which is all that is read. Anything else decodes to nothing
rather than failing a describe.
"""

from __future__ import annotations

import struct

from mirrorsim.client.admin_types import TopicPartition

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


def decode_assignment(data: bytes) -> tuple[TopicPartition, ...]:
    try:
        offset = _INT16.size
        (topics,) = _INT32.unpack_from(data, offset)
        offset += _INT32.size
        assigned: list[TopicPartition] = []
        for _ in range(max(topics, 0)):
            (length,) = _INT16.unpack_from(data, offset)
            offset += _INT16.size
            if length < 0 or offset + length > len(data):
                return ()
            topic = data[offset : offset + length].decode()
            offset += length
            (count,) = _INT32.unpack_from(data, offset)
            offset += _INT32.size
            for _ in range(max(count, 0)):
                (partition,) = _INT32.unpack_from(data, offset)
                offset += _INT32.size
                assigned.append(TopicPartition(topic, partition))
    except (struct.error, UnicodeDecodeError):
        return ()
    return tuple(assigned)
