"""A Produce response encoded from its outcomes is kio's encoding of the same response."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import pytest
from helpers.protocol_strategies import INT32, INT64, TEXT
from hypothesis import given, settings
from hypothesis import strategies as st

from mirrorsim.broker.metrics.requests import error_counts
from mirrorsim.protocol.builder import build
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.framing import decode_response, encode_response
from mirrorsim.protocol.messages.produce_response import (
    MAX_VERSION,
    MIN_VERSION,
    PartitionProduceOutcome,
    ProduceResponseBody,
    TopicProduceOutcome,
)
from mirrorsim.protocol.registry import response_class

VERSIONS = range(MIN_VERSION, MAX_VERSION + 1)
THROTTLE_MS = st.integers(0, 2**31 - 1)

partitions = st.builds(
    PartitionProduceOutcome,
    index=INT32,
    error_code=st.sampled_from(list(ErrorCode)),
    base_offset=INT64,
    log_append_time_ms=st.just(-1) | st.integers(0, 2**45),
    log_start_offset=INT64,
    record_errors=st.lists(st.tuples(INT32, st.none() | TEXT), max_size=3).map(tuple),
    error_message=st.none() | TEXT,
)
topics = st.builds(
    TopicProduceOutcome,
    name=TEXT,
    topic_id=st.uuids(),
    partitions=st.lists(partitions, max_size=5),
)


def kio_response(body: ProduceResponseBody) -> Any:
    """The same response as a kio entity, built the way every other handler builds one."""
    cls = response_class(0, body.version)
    assert cls is not None

    def partition(p: PartitionProduceOutcome) -> dict[str, Any]:
        appended = p.log_append_time_ms
        return {
            "index": p.index,
            "error_code": p.error_code,
            "base_offset": p.base_offset,
            "log_append_time": None
            if appended < 0
            else datetime.datetime.fromtimestamp(appended / 1000, tz=datetime.UTC),
            "log_start_offset": p.log_start_offset,
            "record_errors": [
                {"batch_index": i, "batch_index_error_message": why} for i, why in p.record_errors
            ],
            "error_message": p.error_message,
        }

    return build(
        cls,
        {
            "responses": [
                {
                    "name": t.name,
                    "topic_id": t.topic_id,
                    "partition_responses": [partition(p) for p in t.partitions],
                }
                for t in body.topics
            ],
            "throttle_time": body.throttle_time,
        },
    )


@settings(max_examples=400)
@given(
    version=st.sampled_from(VERSIONS),
    described=st.lists(topics, max_size=4),
    throttle_ms=THROTTLE_MS,
    correlation_id=INT32,
)
def test_the_encoded_response_is_kios_encoding(
    version: int, described: list[TopicProduceOutcome], throttle_ms: int, correlation_id: int
) -> None:
    body = ProduceResponseBody(version, described, throttle_ms=throttle_ms)
    whole = kio_response(body)

    def encoded(response: Any) -> bytes:
        return encode_response(response, api_version=version, correlation_id=correlation_id)

    assert encoded(body) == encoded(whole)
    assert error_counts(body) == error_counts(whole)
    assert body.throttle_time == whole.throttle_time


@pytest.mark.parametrize("version", VERSIONS)
def test_a_raised_throttle_time_is_in_the_bytes(version: int) -> None:
    body = ProduceResponseBody(
        version,
        [TopicProduceOutcome("t", uuid.uuid4(), [PartitionProduceOutcome(0, ErrorCode.NONE, 7)])],
    )
    raised = body.with_throttle_time(datetime.timedelta(milliseconds=1500))
    frame = encode_response(raised, api_version=version, correlation_id=3)
    correlation_id, decoded = decode_response(frame[4:], api_key=0, api_version=version)
    assert correlation_id == 3
    assert decoded.throttle_time == datetime.timedelta(milliseconds=1500)
    assert int(decoded.responses[0].partition_responses[0].base_offset) == 7


def test_a_version_kafka_does_not_serve_is_refused() -> None:
    with pytest.raises(ValueError, match="version 2"):
        ProduceResponseBody(2, [])
