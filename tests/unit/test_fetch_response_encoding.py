"""A Fetch response encoded from its partitions' reads is kio's encoding of the same
response, record sets passed on by reference."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from helpers.protocol_strategies import INT32, INT64, TEXT
from hypothesis import given, settings
from hypothesis import strategies as st

from mirrorsim.broker.metrics.requests import error_counts
from mirrorsim.protocol.builder import build
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.framing import (
    BY_REFERENCE_BYTES,
    decode_response,
    encode_response,
    encode_response_buffers,
)
from mirrorsim.protocol.messages.fetch_response import (
    MAX_VERSION,
    MIN_VERSION,
    FetchPartitionData,
    FetchResponseBody,
    FetchTopicData,
)
from mirrorsim.protocol.registry import response_class

VERSIONS = range(MIN_VERSION, MAX_VERSION + 1)
PAIR_32_64 = st.just((-1, -1)) | st.tuples(INT32, INT64)
PAIR_32_32 = st.just((-1, -1)) | st.tuples(INT32, INT32)

partitions = st.builds(
    FetchPartitionData,
    partition_index=INT32,
    error_code=st.sampled_from(list(ErrorCode)),
    high_watermark=INT64,
    last_stable_offset=INT64,
    log_start_offset=INT64,
    aborted_transactions=st.none() | st.lists(st.tuples(INT64, INT64), max_size=3),
    preferred_read_replica=INT32,
    records=st.binary(max_size=64) | st.binary(min_size=BY_REFERENCE_BYTES, max_size=5000),
    diverging_epoch=PAIR_32_64,
    current_leader=PAIR_32_32,
    mirror_leader_epoch=st.just(-1) | INT32,
)
topics = st.builds(
    FetchTopicData, topic=TEXT, topic_id=st.uuids(), partitions=st.lists(partitions, max_size=4)
)


def kio_response(body: FetchResponseBody) -> Any:
    """The same response as a kio entity, built the way the handlers build one."""
    cls = response_class(1, body.version)
    assert cls is not None

    def partition(p: FetchPartitionData) -> dict[str, Any]:
        epoch, end_offset = p.diverging_epoch
        leader_id, leader_epoch = p.current_leader
        return {
            "partition_index": p.partition_index,
            "error_code": p.error_code,
            "high_watermark": p.high_watermark,
            "last_stable_offset": p.last_stable_offset,
            "log_start_offset": p.log_start_offset,
            "aborted_transactions": None
            if p.aborted_transactions is None
            else [{"producer_id": i, "first_offset": f} for i, f in p.aborted_transactions],
            "preferred_read_replica": p.preferred_read_replica,
            "records": p.records,
            "diverging_epoch": {"epoch": epoch, "end_offset": end_offset},
            "current_leader": {"leader_id": leader_id, "leader_epoch": leader_epoch},
            "mirror_leader_epoch": p.mirror_leader_epoch,
        }

    return build(
        cls,
        {
            "throttle_time": body.throttle_time,
            "error_code": body.error_code,
            "session_id": body.session_id,
            "responses": [
                {
                    "topic": t.topic,
                    "topic_id": t.topic_id,
                    "partitions": [partition(p) for p in t.partitions],
                }
                for t in body.topics
            ],
        },
    )


@settings(max_examples=400)
@given(
    version=st.sampled_from(VERSIONS),
    described=st.lists(topics, max_size=3),
    error_code=st.sampled_from(list(ErrorCode)),
    session_id=INT32,
    throttle_ms=st.integers(0, 2**31 - 1),
    correlation_id=INT32,
)
def test_the_encoded_response_is_kios_encoding(
    version: int,
    described: list[FetchTopicData],
    error_code: int,
    session_id: int,
    throttle_ms: int,
    correlation_id: int,
) -> None:
    body = FetchResponseBody(version, described, error_code, session_id, throttle_ms=throttle_ms)
    whole = kio_response(body)

    def encoded(response: Any) -> bytes:
        return encode_response(response, api_version=version, correlation_id=correlation_id)

    assert encoded(body) == encoded(whole)
    assert error_counts(body) == error_counts(whole)
    assert body.throttle_time == whole.throttle_time


@pytest.mark.parametrize("version", VERSIONS)
def test_record_sets_go_out_as_the_buffers_read_and_the_throttle_can_be_raised(
    version: int,
) -> None:
    records = bytes(range(256)) * 32
    body = FetchResponseBody(
        version,
        [FetchTopicData("t", None, [FetchPartitionData(3, ErrorCode.NONE, 10, records=records)])],
    ).with_throttle_time(datetime.timedelta(milliseconds=250))
    buffers = encode_response_buffers(body, api_version=version, correlation_id=9)
    assert any(buffer is records for buffer in buffers)
    frame = b"".join(buffers)
    correlation_id, decoded = decode_response(frame[4:], api_key=1, api_version=version)
    assert correlation_id == 9
    assert decoded.throttle_time == datetime.timedelta(milliseconds=250)
    assert bytes(decoded.responses[0].partitions[0].records) == records


def test_a_version_kafka_does_not_serve_is_refused() -> None:
    with pytest.raises(ValueError, match="version 3"):
        FetchResponseBody(3, [])
