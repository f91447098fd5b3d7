"""Cross-checks against the record-batch code of real Kafka clients (aiokafka, kafka-python).

Batches the clients build must decode identically with our codec, for every codec they
support; batches we build must read back correctly through aiokafka's parser.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from aiokafka.record import default_records as aiokafka_records
from helpers.record_batches import BatchSpec, batch_specs, expected_records, record_lists
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record import default_records as kafka_python_records

from mirrorsim.protocol.records import (
    Compression,
    RawBatch,
    Record,
    TimestampType,
    build_batch,
    decode_batch,
)

BUILDERS: dict[str, Callable[..., Any]] = {
    "aiokafka-c": aiokafka_records.DefaultRecordBatchBuilder,
    "aiokafka-py": aiokafka_records._DefaultRecordBatchBuilderPy,
    "kafka-python": kafka_python_records.DefaultRecordBatchBuilder,
}
PARSERS: dict[str, Callable[[bytes], Any]] = {
    "aiokafka-c": aiokafka_records.DefaultRecordBatch,
    "aiokafka-py": aiokafka_records._DefaultRecordBatchPy,
}
INTEROP_SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def client_batch(
    builder_name: str,
    records: tuple[Record, ...],
    compression: Compression,
    *,
    transactional: bool = False,
    producer: tuple[int, int, int] = (-1, -1, -1),
) -> RawBatch:
    """Build with a client's builder as its producer would (offsets from 0)."""
    builder = BUILDERS[builder_name](
        2, int(compression), int(transactional), *producer, 64 * 1024 * 1024
    )
    for record in records:
        builder.append(
            record.offset, record.timestamp, record.key, record.value, list(record.headers)
        )
    return RawBatch.from_bytes(bytes(builder.build()))


@pytest.mark.parametrize("builder_name", list(BUILDERS))
@pytest.mark.parametrize("codec", list(Compression))
@INTEROP_SETTINGS
@given(
    records=record_lists(base_offset=0),
    transactional=st.booleans(),
    producer_id=st.integers(0, 2**63 - 1),
    producer_epoch=st.integers(0, 2**15 - 1),
    base_sequence=st.integers(0, 2**31 - 1),
)
def test_client_built_batches_decode_identically(
    builder_name: str,
    codec: Compression,
    records: tuple[Record, ...],
    transactional: bool,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
) -> None:
    producer = (producer_id, producer_epoch, base_sequence)
    batch = client_batch(
        builder_name, records, codec, transactional=transactional, producer=producer
    )
    decoded = decode_batch(batch)
    assert list(decoded.records) == list(records)
    assert decoded.is_transactional is transactional
    assert (decoded.producer_id, decoded.producer_epoch, decoded.base_sequence) == producer
    assert decoded.compression in (codec, Compression.NONE)  # kafka-python skips no-gain
    if decoded.compression is Compression.NONE:
        rebuilt = build_batch(
            records,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
            is_transactional=transactional,
            partition_leader_epoch=batch.partition_leader_epoch,
        )
        assert rebuilt.data == batch.data, "uncompressed batches are byte-identical"


@pytest.mark.parametrize("builder_name", list(BUILDERS))
@pytest.mark.parametrize("codec", [c for c in Compression if c is not Compression.NONE])
def test_client_compressed_batches_really_use_the_codec(
    builder_name: str, codec: Compression
) -> None:
    records = tuple(
        Record(i, 1_700_000_000_000 + i, b"key-%d" % i, b"compressible " * 300, (("h", None),))
        for i in range(40)
    )
    batch = client_batch(builder_name, records, codec)
    assert batch.compression is codec
    assert decode_batch(batch).records == records


def client_view(parser_name: str, data: bytes) -> list[tuple[Any, ...]]:
    batch = PARSERS[parser_name](data)
    assert batch.validate_crc()
    return [
        (r.offset, r.timestamp, r.timestamp_type, r.key, r.value, list(r.headers)) for r in batch
    ]


@pytest.mark.parametrize("parser_name", list(PARSERS))
@INTEROP_SETTINGS
@given(spec=batch_specs())
def test_our_batches_read_correctly_through_aiokafka(parser_name: str, spec: BatchSpec) -> None:
    batch = spec.build()
    parsed = PARSERS[parser_name](batch.data)
    assert parsed.base_offset == spec.base_offset
    assert parsed.compression_type == spec.compression
    assert parsed.is_transactional is spec.is_transactional
    assert (parsed.producer_id, parsed.producer_epoch, parsed.base_sequence) == (
        spec.producer_id,
        spec.producer_epoch,
        spec.base_sequence,
    )
    assert parsed.max_timestamp == max(r.timestamp for r in spec.records)
    assert client_view(parser_name, batch.data) == [
        (r.offset, r.timestamp, int(spec.timestamp_type), r.key, r.value, list(r.headers))
        for r in expected_records(spec)
    ]


@pytest.mark.parametrize("codec", list(Compression))
def test_log_append_time_is_what_aiokafka_consumers_see(codec: Compression) -> None:
    records = [Record(0, 100, None, b"a"), Record(1, 50, None, b"b")]
    batch = build_batch(records, compression=codec, timestamp_type=TimestampType.LOG_APPEND_TIME)
    assert [row[1] for row in client_view("aiokafka-c", batch.data)] == [100, 100]
    assert [r.timestamp for r in decode_batch(batch).records] == [100, 100]
