"""Frame splitting, request/response headers and their version rules."""

import datetime
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.api_versions.v3.response import ApiVersionsResponse
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.schema.metadata.v4.request import MetadataRequest as MetadataRequestV4
from kio.schema.metadata.v12.request import MetadataRequest as MetadataRequestV12
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.schema.types import TopicName
from kio.static.primitive import i16, i32

from mirrorsim.protocol.framing import (
    FrameAssembler,
    FrameError,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    peek_header,
)
from mirrorsim.protocol.messages.delete_mirror import DeleteMirrorRequest, DeleteMirrorResponse

frames_payloads = st.lists(st.binary(max_size=40), min_size=1, max_size=6)


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


@settings(max_examples=100)
@given(payloads=frames_payloads, data=st.data())
def test_assembler_reassembles_frames_from_any_chunking(
    payloads: list[bytes], data: st.DataObject
) -> None:
    stream = b"".join(_frame(p) for p in payloads)
    cuts = sorted(data.draw(st.sets(st.integers(0, len(stream)), max_size=10)))
    assembler = FrameAssembler()
    out: list[bytes | memoryview] = []
    previous = 0
    for cut in [*cuts, len(stream)]:
        out += assembler.feed(stream[previous:cut])
        previous = cut
    assert out == payloads


@settings(max_examples=100)
@given(
    payloads=st.lists(st.binary(max_size=300), min_size=1, max_size=6),
    chunk=st.integers(1, 400),
)
def test_fed_frames_larger_than_the_scratch_arrive_whole(payloads: list[bytes], chunk: int) -> None:
    """Frames that do not fit the scratch buffer are fed into their own frame buffer."""
    stream = b"".join(_frame(p) for p in payloads)
    assembler = FrameAssembler(scratch_size=64)
    out = [
        bytes(frame)
        for start in range(0, len(stream), chunk)
        for frame in assembler.feed(stream[start : start + chunk])
    ]
    assert out == payloads


def test_assembler_fed_byte_by_byte() -> None:
    payloads = [b"", b"a", b"hello world" * 20]
    stream = b"".join(_frame(p) for p in payloads)
    assembler = FrameAssembler()
    out = [frame for i in range(len(stream)) for frame in assembler.feed(stream[i : i + 1])]
    assert out == payloads


@pytest.mark.parametrize("size", [-1, -(2**31), 1025])
def test_assembler_rejects_negative_and_oversized_frames(size: int) -> None:
    assembler = FrameAssembler(max_frame_size=1024)
    with pytest.raises(FrameError):
        assembler.feed(struct.pack(">i", size) + b"x")


def test_assembler_holds_partial_frame() -> None:
    assembler = FrameAssembler()
    assert assembler.feed(struct.pack(">i", 10) + b"12345") == []
    assert assembler.feed(b"67890" + struct.pack(">i", 1)) == [b"1234567890"]
    assert assembler.feed(b"z") == [b"z"]


def _payload(frame: bytes) -> bytes:
    (size,) = struct.unpack_from(">i", frame)
    assert size == len(frame) - 4
    return frame[4:]


def test_flexible_request_round_trip_uses_header_v2() -> None:
    body = MetadataRequestV12(
        topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
    )
    frame = encode_request(body, api_version=12, correlation_id=9, client_id="me")
    payload = _payload(frame)
    # header v2: key, version, correlation id, legacy client id, then an empty tag section
    assert payload[:12] == struct.pack(">hhih", 3, 12, 9, 2) + b"me"
    assert payload[12] == 0
    request = decode_request(payload)
    assert (request.header.api_key, request.header.api_version) == (3, 12)
    assert request.header.client_id == "me"
    assert request.body == body


def test_legacy_request_uses_header_v1_without_tags() -> None:
    body = MetadataRequestV4(topics=None, allow_auto_topic_creation=True)
    payload = _payload(encode_request(body, api_version=4, correlation_id=1, client_id=None))
    assert payload[:10] == struct.pack(">hhih", 3, 4, 1, -1)
    assert decode_request(payload).body == body


def test_api_versions_response_header_is_always_v0() -> None:
    """Clients parse it before knowing flexible versions: no tag section after the id."""
    body = ApiVersionsResponse(
        error_code=KioErrorCode.none, api_keys=(), throttle_time=datetime.timedelta(0)
    )
    payload = _payload(encode_response(body, api_version=3, correlation_id=12))
    assert payload[:4] == struct.pack(">i", 12)
    assert payload[4:6] == struct.pack(">h", 0)  # error code follows the correlation id
    assert decode_response(payload, api_key=18, api_version=3) == (12, body)


def test_flexible_response_header_is_v1() -> None:
    body = DeleteMirrorResponse(
        throttle_time=datetime.timedelta(0), error_code=0, error_message=None
    )
    payload = _payload(encode_response(body, api_version=0, correlation_id=3))
    assert payload[:5] == struct.pack(">i", 3) + b"\x00"
    assert decode_response(payload, api_key=104, api_version=0) == (3, body)


def test_trailing_bytes_after_request_are_ignored_as_kafka_does() -> None:
    """Kafka's RequestContext parses the body and ignores what follows; librdkafka 2.16
    relies on it (MetadataRequest v12 with three extra bytes)."""
    request = DeleteMirrorRequest(mirror_name="m")
    payload = _payload(encode_request(request, api_version=0, correlation_id=4, client_id="c"))
    decoded = decode_request(payload + b"\x00\x01\x02")
    assert decoded.body == request
    assert decoded.header.correlation_id == 4


def test_null_in_a_non_nullable_array_is_an_error_even_with_bytes_after_it() -> None:
    """A flipped bit can turn an array length into null and end the body early; the bytes
    left over must not make such a body acceptable (kio's fast reader lets the null by)."""
    partition = PartitionProduceData(index=i32(0), records=None)
    request = ProduceRequest(
        acks=i16(-1),
        timeout=datetime.timedelta(seconds=1),
        topic_data=(TopicProduceData(name=TopicName("t"), partition_data=(partition,)),),
    )
    payload = bytearray(
        _payload(encode_request(request, api_version=9, correlation_id=5, client_id="c"))
    )
    payload[payload.index(b"\x02t") + 2] = 0  # compact array length 0 means null
    with pytest.raises(FrameError, match="non-nullable") as caught:
        decode_request(bytes(payload))
    assert caught.value.correlation_id == 5


def test_trailing_bytes_after_response_are_an_error() -> None:
    body = DeleteMirrorResponse(throttle_time=datetime.timedelta(0), error_code=0)
    payload = _payload(encode_response(body, api_version=0, correlation_id=8))
    with pytest.raises(FrameError) as caught:
        decode_response(payload + b"junk", api_key=104, api_version=0)
    assert caught.value.correlation_id == 8


def test_header_too_short_has_no_correlation_id() -> None:
    with pytest.raises(FrameError) as caught:
        decode_request(b"\x00\x12\x00")
    assert caught.value.correlation_id is None


def test_unknown_api_key_keeps_correlation_id() -> None:
    with pytest.raises(FrameError) as caught:
        decode_request(struct.pack(">hhi", 999, 0, 31))
    assert caught.value.correlation_id == 31


def test_unsupported_version_keeps_correlation_id() -> None:
    with pytest.raises(FrameError) as caught:
        decode_request(struct.pack(">hhi", 94, 1, 55) + b"\x00\x00\x00")
    assert caught.value.correlation_id == 55


def test_truncated_client_id_keeps_correlation_id() -> None:
    payload = struct.pack(">hhih", 18, 3, 66, 10) + b"abc"
    assert peek_header(payload) == (18, 3, 66)
    with pytest.raises(FrameError) as caught:
        decode_request(payload)
    assert caught.value.correlation_id == 66


def test_truncated_response_keeps_correlation_id() -> None:
    payload = struct.pack(">i", 21) + b"\x00"
    with pytest.raises(FrameError) as caught:
        decode_response(payload, api_key=18, api_version=3)
    assert caught.value.correlation_id == 21
