"""Partition logs written straight to disk in Kafka's layout, for the verification tests.

A log is a list of batches; ``write_partition`` cuts it into segments the way a broker
rolls them, naming each `.log` after its first batch's base offset.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from mirrorsim.protocol.records import Compression, RawBatch, Record, build_batch

BASE_TIMESTAMP = 1_700_000_000_000


def make_batches(
    count: int,
    *,
    records_per_batch: int = 5,
    start_offset: int = 0,
    leader_epoch: int = 0,
    compression: Compression = Compression.NONE,
    salt: str = "",
) -> list[RawBatch]:
    """``count`` consecutive batches; ``salt`` changes every value (another producer)."""
    batches = []
    offset = start_offset
    for _ in range(count):
        records = [
            Record(
                offset=offset + i,
                timestamp=BASE_TIMESTAMP + offset + i,
                key=f"key-{offset + i}".encode(),
                value=f"value-{offset + i}{salt}".encode() * 3,
                headers=(("trace", f"{offset + i}".encode()),),
            )
            for i in range(records_per_batch)
        ]
        batches.append(
            build_batch(
                records,
                base_offset=offset,
                compression=compression,
                partition_leader_epoch=leader_epoch,
            )
        )
        offset += records_per_batch
    return batches


def write_partition(
    data_dir: Path, topic: str, partition: int, batches: Sequence[RawBatch], *, per_segment: int = 4
) -> Path:
    directory = data_dir / f"{topic}-{partition}"
    directory.mkdir(parents=True, exist_ok=True)
    for start in range(0, len(batches), per_segment):
        chunk = batches[start : start + per_segment]
        segment = directory / f"{chunk[0].base_offset:020d}.log"
        segment.write_bytes(b"".join(batch.data for batch in chunk))
    return directory


def flip_byte(batch: RawBatch, position: int) -> RawBatch:
    """The batch with one byte inverted and its header left as it was (disk corruption)."""
    data = bytearray(batch.data)
    data[position] ^= 0xFF
    return RawBatch.from_bytes(bytes(data))
