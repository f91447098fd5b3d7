"""Decoded (inflated) records, kept apart from the raw batches that the data path moves."""

from __future__ import annotations

from dataclasses import dataclass

Header = tuple[str, bytes | None]
Headers = tuple[Header, ...]


@dataclass(frozen=True, slots=True)
class Record:
    """One record with absolute offset and timestamp (milliseconds).

    ``timestamp`` is what a Kafka consumer sees: the record's own create time, or the
    batch's max timestamp when the batch carries LOG_APPEND_TIME. To build a batch, give
    the offsets and timestamps the records should have; ``build_batch`` stores them as
    deltas from the batch's base offset and base timestamp.
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: Headers = ()
