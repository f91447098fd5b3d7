"""Unknown tagged fields and unknown error codes must not make a message undecodable."""

import datetime
import enum
import io
import struct
import uuid

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.schema.fetch.v18.request import FetchRequest as FetchRequestV18
from kio.schema.fetch.v18.response import FetchResponse as FetchResponseV18
from kio.schema.produce.v9.response import (
    PartitionProduceResponse,
    ProduceResponse,
    TopicProduceResponse,
)
from kio.serial import entity_reader, entity_writer

from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.framing import FrameError, decode_request, decode_response
from mirrorsim.protocol.messages import fetch_v19
from mirrorsim.protocol.schema_reader import SchemaDecodeError, schema_reader, tolerant_reader


def _encode(entity: object) -> bytes:
    buf = io.BytesIO()
    entity_writer(type(entity))(buf, entity)
    return buf.getvalue()


def _compact_string(text: str) -> bytes:
    raw = text.encode()
    return bytes([len(raw) + 1]) + raw


def test_api_versions_request_with_unknown_tags_in_header_and_body() -> None:
    """Hand-encoded ApiVersions v3 frame from a client that knows tags we do not."""
    header = (
        struct.pack(">hhi", 18, 3, 42)
        + struct.pack(">h", 3)
        + b"cli"
        + bytes([1, 9, 2])  # one tagged field: tag 9, 2 bytes
        + b"\xbe\xef"
    )
    body = (
        _compact_string("kcat")
        + _compact_string("1.7.1")
        + bytes([2, 5, 1, 0x7F, 40, 3])  # tag 5 (1 byte), tag 40 (3 bytes)
        + b"abc"
    )
    with pytest.raises(KeyError):
        entity_reader(ApiVersionsRequest)(body, 0)

    request = decode_request(header + body)

    assert request.header.correlation_id == 42
    assert request.header.client_id == "cli"
    assert request.body == ApiVersionsRequest(
        client_software_name="kcat", client_software_version="1.7.1"
    )


def _fetch_v19_request(mirror_leader_epoch: int) -> fetch_v19.FetchRequest:
    partition = fetch_v19.FetchPartition(
        partition=0,
        fetch_offset=100,
        partition_max_bytes=1024,
        mirror_leader_epoch=mirror_leader_epoch,
    )
    return fetch_v19.FetchRequest(
        max_wait=datetime.timedelta(milliseconds=500),
        min_bytes=1,
        topics=(fetch_v19.FetchTopic(topic_id=uuid.uuid4(), partitions=(partition,)),),
        forgotten_topics_data=(),
    )


def test_v18_reader_skips_mirror_leader_epoch_in_nested_partition() -> None:
    """A v19 body (MirrorLeaderEpoch in FetchPartition, tag 2) read with kio's v18 schema."""
    raw = _encode(_fetch_v19_request(7))
    with pytest.raises(KeyError):
        entity_reader(FetchRequestV18)(raw, 0)

    decoded, size = tolerant_reader(FetchRequestV18)(raw, 0)

    assert size == len(raw)
    assert decoded.topics[0].partitions[0].fetch_offset == 100
    assert decoded.topics[0].partitions[0].partition_max_bytes == 1024


def test_unknown_tag_inside_fetch_response_partition() -> None:
    """A v19 response with MirrorLeaderEpoch (tag 3) decoded by a v18-only peer."""
    partition = fetch_v19.PartitionData(
        partition_index=2,
        error_code=KioErrorCode.none,
        high_watermark=10,
        aborted_transactions=None,
        records=b"",
        mirror_leader_epoch=4,
    )
    response = fetch_v19.FetchResponse(
        throttle_time=datetime.timedelta(0),
        error_code=KioErrorCode.none,
        responses=(
            fetch_v19.FetchableTopicResponse(topic_id=uuid.uuid4(), partitions=(partition,)),
        ),
    )
    frame_body = struct.pack(">i", 5) + b"\x00" + _encode(response)

    correlation_id, decoded = decode_response(frame_body, api_key=1, api_version=19)
    assert correlation_id == 5
    assert decoded.responses[0].partitions[0].mirror_leader_epoch == 4

    legacy, _ = tolerant_reader(FetchResponseV18)(_encode(response), 0)
    assert legacy.responses[0].partitions[0].high_watermark == 10


def test_mirror_error_code_in_a_standard_response_decodes() -> None:
    """kio's enum stops at Kafka's codes; READ_ONLY_TOPIC in a Produce response must decode."""
    partition = PartitionProduceResponse(
        index=0,
        error_code=ErrorCode.READ_ONLY_TOPIC,  # type: ignore[arg-type]
        base_offset=-1,
        log_append_time=None,
        log_start_offset=-1,
        record_errors=(),
        error_message=None,
    )
    response = ProduceResponse(
        responses=(TopicProduceResponse(name="orders", partition_responses=(partition,)),),
        throttle_time=datetime.timedelta(0),
    )
    raw = _encode(response)
    with pytest.raises(ValueError):
        entity_reader(ProduceResponse)(raw, 0)

    decoded, _ = tolerant_reader(ProduceResponse)(raw, 0)
    code = decoded.responses[0].partition_responses[0].error_code
    assert code is ErrorCode.READ_ONLY_TOPIC


_FUTURE_CODE = enum.IntEnum("FutureErrors", {"NOT_YET_INVENTED": 999}).NOT_YET_INVENTED


def test_error_code_newer_than_every_table_stays_an_int() -> None:
    raw = _encode(
        ProduceResponse(
            responses=(
                TopicProduceResponse(
                    name="t",
                    partition_responses=(
                        PartitionProduceResponse(
                            index=0,
                            error_code=_FUTURE_CODE,  # type: ignore[arg-type]
                            base_offset=0,
                            log_append_time=None,
                            log_start_offset=0,
                            record_errors=(),
                            error_message=None,
                        ),
                    ),
                ),
            ),
            throttle_time=datetime.timedelta(0),
        )
    )
    decoded, _ = tolerant_reader(ProduceResponse)(raw, 0)
    code = decoded.responses[0].partition_responses[0].error_code
    assert code == 999
    assert type(code) is int


def test_tagged_field_whose_size_lies_is_malformed() -> None:
    """A known tag whose declared size disagrees with its content is rejected, not guessed."""
    raw = bytearray(_encode(_fetch_v19_request(7)))
    tagged = bytes([1, 2, 4]) + struct.pack(">i", 7)
    at = bytes(raw).index(tagged)
    raw[at + 2] = 5
    raw[at + 7 : at + 7] = b"\x00"
    with pytest.raises(SchemaDecodeError):
        schema_reader(fetch_v19.FetchRequest)(bytes(raw), 0)


@pytest.mark.parametrize("cut", [1, 5, 20, 40])
def test_truncated_body_raises_frame_error_with_correlation_id(cut: int) -> None:
    frame_body = (
        struct.pack(">hhi", 1, 19, 77)
        + struct.pack(">h", -1)
        + b"\x00"
        + _encode(_fetch_v19_request(3))
    )
    with pytest.raises(FrameError) as caught:
        decode_request(frame_body[:-cut])
    assert caught.value.correlation_id == 77
