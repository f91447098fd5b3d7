"""What a truncation would drop, record by record, and the cut to the last stable offset.

Failover reports name every record that a ``truncate_to`` removes, with the producer and
transaction it belonged to, so an operator can tell an open transaction that vanished
from a committed one whose marker was cut off. The log itself only counts offsets
(``fetcher.truncation.dropped_offsets``); this reads the batches above the cut.
"""

from __future__ import annotations

from dataclasses import dataclass

from mirrorsim.broker.log import PartitionLog
from mirrorsim.protocol.records import (
    TransactionMarker,
    decode_control_batch,
    decode_records,
)


@dataclass(frozen=True, slots=True)
class DroppedRecord:
    offset: int
    producer_id: int
    transactional: bool
    marker: str | None
    """"COMMIT" / "ABORT" for a transaction marker, the control type otherwise, None
    for data."""
    key: bytes | None


def dropped_records(log: PartitionLog, truncate_to: int) -> list[DroppedRecord]:
    """Every record at or above ``truncate_to`` (a straddling batch counts whole)."""
    dropped: list[DroppedRecord] = []
    start = max(truncate_to, log.log_start_offset)
    if start >= log.log_end_offset:
        return dropped
    for batch in log.batches(start):
        if batch.last_offset < truncate_to:
            continue
        if batch.is_control:
            control = decode_control_batch(batch)
            kind = (
                control.kind.name
                if isinstance(control, TransactionMarker)
                else type(control).__name__
            )
            dropped.append(
                DroppedRecord(
                    batch.base_offset, batch.producer_id, batch.is_transactional, kind, None
                )
            )
            continue
        dropped.extend(
            DroppedRecord(r.offset, batch.producer_id, batch.is_transactional, None, r.key)
            for r in decode_records(batch)
        )
    return dropped


def truncate_to_last_stable_offset(log: PartitionLog) -> list[DroppedRecord]:
    """Cut the log at its last stable offset; returns what went."""
    cut = log.last_stable_offset
    dropped = dropped_records(log, cut)
    log.truncate_to(cut)
    return dropped
