"""The record views decode batches straight into Arrow columns: the same records as
``decode_records``, refused exactly when it refuses them, and digests that are equal
exactly when the bytes are."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pytest
from helpers.record_batches import BatchSpec, batch_specs, payloads
from helpers.spark_logs import make_batches
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mirrorsim.protocol.records import (
    HEADER_SIZE,
    Compression,
    CorruptRecordError,
    RawBatch,
    decode_records,
)
from mirrorsim.verify.views import (
    INLINE_DIGEST_BYTES,
    SHOWN_PREFIX_BYTES,
    content_digest,
    record_arrow_batches,
    record_digest_batches,
)

VIEW_SETTINGS = settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
ViewFunction = Callable[..., Iterator[pa.RecordBatch]]


def view_rows(view: ViewFunction, batches: list[RawBatch], **limits: int | None) -> list[dict]:
    return [row for arrow in view("orders", 3, batches, **limits) for row in arrow.to_pylist()]


def expected_rows(
    batches: list[RawBatch], start: int | None, end: int | None, digest: Callable[[Any], Any]
) -> list[dict]:
    return [
        {
            "topic": "orders",
            "partition": 3,
            "offset": record.offset,
            "timestamp": record.timestamp,
            "key" if digest is _same else "key_digest": digest(record.key),
            "value" if digest is _same else "value_digest": digest(record.value),
            "headers": [{"key": key, "value": value} for key, value in record.headers],
        }
        for batch in batches
        for record in decode_records(batch)
        if (start is None or record.offset >= start) and (end is None or record.offset < end)
    ]


def _same(data: Any) -> Any:
    return data


@VIEW_SETTINGS
@given(
    specs=st.lists(batch_specs(), min_size=1, max_size=3),
    start=st.none() | st.integers(0, 2**62),
    end=st.none() | st.integers(0, 2**62),
)
def test_views_hold_the_records_decode_records_finds(
    specs: list[BatchSpec], start: int | None, end: int | None
) -> None:
    batches = [spec.build() for spec in specs]

    records = view_rows(record_arrow_batches, batches, start_offset=start, end_offset=end)
    digests = view_rows(record_digest_batches, batches, start_offset=start, end_offset=end)

    assert records == expected_rows(batches, start, end, _same)
    assert digests == expected_rows(batches, start, end, content_digest)


def test_a_range_within_one_batch_keeps_only_its_records() -> None:
    [whole] = make_batches(1, records_per_batch=6, start_offset=10)

    rows = view_rows(record_digest_batches, [whole], start_offset=12, end_offset=14)

    assert [row["offset"] for row in rows] == [12, 13]


@VIEW_SETTINGS
@given(spec=batch_specs(), data=st.data())
def test_a_damaged_records_section_is_refused_exactly_when_decode_records_refuses_it(
    spec: BatchSpec, data: st.DataObject
) -> None:
    """A flipped byte may still decode (into other records) or may break a length; the
    views must do what ``decode_records`` does either way, or the record-level check would
    fail on batches the record decoder accepts, or the reverse."""
    batch = spec.build()
    if batch.compression is not Compression.NONE:
        return
    position = data.draw(st.integers(HEADER_SIZE, batch.size - 1))
    damaged = bytearray(batch.data)
    damaged[position] ^= data.draw(st.integers(1, 255))
    broken = RawBatch.from_bytes(bytes(damaged))

    try:
        expected = expected_rows([broken], None, None, _same)
    except CorruptRecordError:
        with pytest.raises(CorruptRecordError):
            view_rows(record_arrow_batches, [broken])
        with pytest.raises(CorruptRecordError):
            view_rows(record_digest_batches, [broken])
    else:
        assert view_rows(record_arrow_batches, [broken]) == expected


@given(first=payloads, second=payloads)
def test_digests_are_equal_exactly_when_the_bytes_are(
    first: bytes | None, second: bytes | None
) -> None:
    assert (content_digest(first) == content_digest(second)) == (first == second)


@pytest.mark.parametrize("size", [0, 1, SHOWN_PREFIX_BYTES, INLINE_DIGEST_BYTES])
def test_short_values_are_their_own_digest(size: int) -> None:
    data = bytes(range(size))
    assert content_digest(data) == data
    assert content_digest(None) is None


@pytest.mark.parametrize("size", [INLINE_DIGEST_BYTES + 1, 1000, 1 << 20])
def test_a_long_value_keeps_its_shown_prefix_and_is_longer_than_any_inlined_one(
    size: int,
) -> None:
    data = bytes(index % 251 for index in range(size))

    digest = content_digest(data)

    assert digest is not None
    assert len(digest) == INLINE_DIGEST_BYTES + 1
    assert digest[:SHOWN_PREFIX_BYTES] == data[:SHOWN_PREFIX_BYTES]
    assert hashlib.sha256(data).digest().startswith(digest[SHOWN_PREFIX_BYTES:])
