"""A fetched record set split into raw batches that share its memory.

A mirror fetcher checks each batch's CRC and appends the batches to its log unchanged,
so copying every batch out of the response (as ``iter_batches`` does, for callers that
keep batches) would touch every mirrored byte once more for nothing. Here each batch's
``data`` is a read-only view of the record set; only control batches are copied, because
decoding their control record (on append, for producer state) wants ``bytes``.
"""

from __future__ import annotations

import struct

from mirrorsim.protocol.records.raw_batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    CorruptRecordError,
    RawBatch,
)

_OFFSET_AND_LENGTH = struct.Struct(">qi")


def fetched_batches(records: bytes | memoryview) -> tuple[RawBatch, ...]:
    """The whole batches of ``records``; a partial batch at the end is left out, as Kafka
    clients do with the tail a size-limited Fetch may cut."""
    view = memoryview(records).toreadonly()
    batches: list[RawBatch] = []
    position, end = 0, len(view)
    while end - position >= LOG_OVERHEAD:
        _, length = _OFFSET_AND_LENGTH.unpack_from(view, position)
        size = length + LOG_OVERHEAD
        if size < HEADER_SIZE:
            raise CorruptRecordError(f"batch at byte {position} declares {size} bytes")
        if position + size > end:
            break
        batch = RawBatch.from_bytes(view[position : position + size])
        if batch.is_control:
            batch = RawBatch.from_bytes(bytes(batch.data))
        batches.append(batch)
        position += size
    return tuple(batches)
