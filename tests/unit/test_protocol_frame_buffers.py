"""The zero-copy wire path: responses encoded as buffers, frames received in place."""

import datetime
import io
import struct
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.serial import entity_writer
from kio.static.primitive import i32

from mirrorsim.protocol.builder import build
from mirrorsim.protocol.framing import (
    BY_REFERENCE_BYTES,
    FrameAssembler,
    FrameError,
    _response_header_class,
    decode_response,
    encode_response,
    encode_response_buffers,
)
from mirrorsim.protocol.registry import response_class

FETCH_KEY = 1
SCRATCH = 64


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _receive(assembler: FrameAssembler, stream: bytes, reads: list[int]) -> list[bytes]:
    """Feed ``stream`` as a socket would: each read fills at most the buffer offered."""
    out: list[bytes] = []
    position = 0
    sizes = iter(reads)
    while position < len(stream):
        target = assembler.get_buffer()
        wanted = next(sizes, len(stream))
        n = max(1, min(wanted, len(target), len(stream) - position))
        target[:n] = stream[position : position + n]
        position += n
        out += [bytes(p) for p in assembler.buffer_updated(n)]
    return out


@settings(max_examples=150)
@given(
    payloads=st.lists(
        st.one_of(st.binary(max_size=40), st.binary(min_size=SCRATCH, max_size=600)),
        min_size=1,
        max_size=8,
    ),
    reads=st.lists(st.integers(1, 700), max_size=40),
)
def test_assembler_reassembles_small_and_large_frames_from_any_reads(
    payloads: list[bytes], reads: list[int]
) -> None:
    stream = b"".join(_frame(p) for p in payloads)
    assert _receive(FrameAssembler(scratch_size=SCRATCH), stream, reads) == payloads


@pytest.mark.parametrize("size", [-1, -(2**31), 1025])
def test_assembler_rejects_negative_and_oversized_frames(size: int) -> None:
    assembler = FrameAssembler(max_frame_size=1024, scratch_size=SCRATCH)
    data = struct.pack(">i", size) + b"x"
    assembler.get_buffer()[: len(data)] = data
    with pytest.raises(FrameError):
        assembler.buffer_updated(len(data))


def _receive_views(assembler: FrameAssembler, stream: bytes) -> list[memoryview | bytes]:
    out: list[memoryview | bytes] = []
    position = 0
    while position < len(stream):
        target = assembler.get_buffer()
        n = min(len(target), len(stream) - position)
        target[:n] = stream[position : position + n]
        position += n
        out += assembler.buffer_updated(n)
    return out


def test_large_payload_kept_by_the_caller_is_not_overwritten_by_the_next_frame() -> None:
    assembler = FrameAssembler(scratch_size=SCRATCH)
    (first,) = _receive_views(assembler, _frame(b"a" * 500))
    (second,) = _receive_views(assembler, _frame(b"b" * 500))
    assert bytes(first) == b"a" * 500
    assert bytes(second) == b"b" * 500
    assert isinstance(first, memoryview) and first.readonly


def test_large_payloads_released_by_the_caller_share_one_frame_buffer() -> None:
    assembler = FrameAssembler(scratch_size=SCRATCH)
    (first,) = _receive_views(assembler, _frame(b"a" * 500))
    assert isinstance(first, memoryview)
    base = first.obj
    first.release()
    (second,) = _receive_views(assembler, _frame(b"b" * 400))
    assert isinstance(second, memoryview)
    assert second.obj is base
    assert bytes(second) == b"b" * 400


def _fetch_response(version: int, records: list[bytes | None]) -> Any:
    partitions = [
        {
            "partition_index": index,
            "error_code": KioErrorCode.none,
            "high_watermark": 100 + index,
            "last_stable_offset": 90,
            "log_start_offset": 0,
            "aborted_transactions": None if index % 2 else [{"producer_id": 7, "first_offset": 3}],
            "preferred_read_replica": -1,
            "records": blob,
            "mirror_leader_epoch": index,
        }
        for index, blob in enumerate(records)
    ]
    return build(
        response_class(FETCH_KEY, version),
        {
            "throttle_time": datetime.timedelta(0),
            "error_code": KioErrorCode.none,
            "session_id": 5,
            "responses": [{"topic": "t", "topic_id": uuid.UUID(int=9), "partitions": partitions}],
        },
    )


def _kio_frame(body: Any, version: int, correlation_id: int) -> bytes:
    header_cls = _response_header_class(FETCH_KEY, body.__flexible__)
    buf = io.BytesIO()
    entity_writer(header_cls)(buf, header_cls(correlation_id=i32(correlation_id)))
    entity_writer(type(body))(buf, body)
    return _frame(buf.getvalue())


@settings(max_examples=60, deadline=None)
@given(
    version=st.sampled_from([4, 7, 11, 12, 13, 15, 16, 17, 18, 19]),
    records=st.lists(
        st.one_of(st.binary(max_size=100), st.binary(min_size=BY_REFERENCE_BYTES, max_size=9000)),
        max_size=5,
    ),
)
def test_fetch_response_buffers_are_kios_bytes_with_records_by_reference(
    version: int, records: list[bytes]
) -> None:
    body = _fetch_response(version, list(records))
    buffers = encode_response_buffers(body, api_version=version, correlation_id=41)
    assert b"".join(buffers) == _kio_frame(body, version, 41)
    assert encode_response(body, api_version=version, correlation_id=41) == b"".join(buffers)
    kept = [id(b) for b in buffers]
    for blob in records:
        if len(blob) >= BY_REFERENCE_BYTES:
            assert id(blob) in kept
    _, decoded = decode_response(b"".join(buffers)[4:], api_key=FETCH_KEY, api_version=version)
    assert [p.records for p in decoded.responses[0].partitions] == records


def test_a_received_frame_view_decodes_with_records_intact() -> None:
    records = [bytes(range(256)) * 40, b"", b"x" * 5000]
    body = _fetch_response(19, list(records))
    stream = b"".join(encode_response_buffers(body, api_version=19, correlation_id=3))
    assembler = FrameAssembler(scratch_size=SCRATCH)
    (payload,) = _receive_views(assembler, stream)
    correlation_id, decoded = decode_response(payload, api_key=FETCH_KEY, api_version=19)
    assert correlation_id == 3
    assert decoded == body
