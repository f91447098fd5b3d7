"""KIP-1279 messages: registration, frame round trips, and the __mirror_state records."""

import uuid
from typing import Any

import pytest
from helpers.protocol_strategies import entities
from hypothesis import given, settings
from hypothesis import strategies as st

from mirrorsim.protocol.framing import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from mirrorsim.protocol.messages import MESSAGE_PAIRS
from mirrorsim.protocol.messages.constants import MirrorApiKey
from mirrorsim.protocol.messages.create_topics_v8 import (
    CreatableTopic,
    CreateTopicsRequest,
    MirrorInfo,
)
from mirrorsim.protocol.messages.mirror_state_records import (
    LastMirrorEpochsKey,
    LastMirrorEpochsPartition,
    LastMirrorEpochsTopic,
    LastMirrorEpochsValue,
    MirrorPartitionStateId,
    MirrorPartitionStateKey,
    MirrorPartitionStateValue,
    MirrorStateRecordError,
    decode_mirror_state_key,
    decode_mirror_state_record,
    decode_mirror_state_value,
    encode_mirror_state_key,
    encode_mirror_state_value,
)
from mirrorsim.protocol.registry import request_class, response_class, supported_versions

PAIR_IDS = [f"{req.__name__}-v{version}" for _, version, req, _ in MESSAGE_PAIRS]


def _payload(frame: bytes) -> bytes:
    return frame[4:]


@pytest.mark.parametrize(
    ("api_key", "version", "request_cls", "response_cls"), MESSAGE_PAIRS, ids=PAIR_IDS
)
def test_registry_serves_every_new_message(
    api_key: int, version: int, request_cls: type, response_cls: type
) -> None:
    assert request_class(api_key, version) is request_cls
    assert response_class(api_key, version) is response_cls
    assert request_cls.__api_key__ == api_key
    assert request_cls.__flexible__


def test_every_mirror_api_key_is_registered_and_advertised() -> None:
    versions = supported_versions()
    for key in MirrorApiKey:
        assert request_class(key, 0) is not None
        assert versions[key] == (0, 0)
    assert versions[1][1] == 19
    assert versions[19][1] == 8


@pytest.mark.parametrize(
    ("api_key", "version", "request_cls", "response_cls"), MESSAGE_PAIRS, ids=PAIR_IDS
)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_frame_round_trip(
    api_key: int, version: int, request_cls: type, response_cls: type, data: st.DataObject
) -> None:
    request: Any = data.draw(entities(request_cls))
    correlation_id = data.draw(st.integers(-(2**31), 2**31 - 1))
    frame = encode_request(
        request, api_version=version, correlation_id=correlation_id, client_id="mirror-test"
    )
    decoded = decode_request(_payload(frame))
    assert decoded.header.api_key == api_key
    assert decoded.header.correlation_id == correlation_id
    assert decoded.body == request

    response: Any = data.draw(entities(response_cls))
    frame = encode_response(response, api_version=version, correlation_id=correlation_id)
    assert decode_response(_payload(frame), api_key=api_key, api_version=version) == (
        correlation_id,
        response,
    )


def test_create_topics_v8_mirror_info_is_a_nullable_struct() -> None:
    source_id = uuid.uuid4()
    plain = CreatableTopic(
        name="a", num_partitions=1, replication_factor=1, assignments=(), configs=()
    )
    mirrored = CreatableTopic(
        name="b",
        num_partitions=3,
        replication_factor=3,
        assignments=(),
        configs=(),
        mirror_info=MirrorInfo(topic_id=source_id),
    )
    body = CreateTopicsRequest(topics=(plain, mirrored))
    frame = encode_request(body, api_version=8, correlation_id=1, client_id=None)
    payload = _payload(frame)
    assert b"\xff" + b"\x00" in payload  # null marker (-1) then the empty tag section
    assert b"\x01" + source_id.bytes in payload
    assert decode_request(payload).body == body


def test_mirror_partition_state_record_matches_spec_dump_sizes() -> None:
    """The spec's kafka-dump-log sample: keySize 13, valueSize 17 for my-mirror/my-topic."""
    key = MirrorPartitionStateKey(mirror_name="my-mirror")
    value = MirrorPartitionStateValue(
        topic_name="my-topic", partition=0, state=MirrorPartitionStateId.PREPARING
    )
    key_bytes = encode_mirror_state_key(key)
    value_bytes = encode_mirror_state_value(value)
    assert len(key_bytes) == 13
    assert len(value_bytes) == 17
    assert key_bytes[:2] == b"\x00\x02"
    assert value_bytes[:2] == b"\x00\x00"
    assert decode_mirror_state_record(key_bytes, value_bytes) == (key, value)
    assert decode_mirror_state_record(key_bytes, None) == (key, None)


names = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20)
epochs_values = st.builds(
    LastMirrorEpochsValue,
    topics=st.lists(
        st.builds(
            LastMirrorEpochsTopic,
            name=names,
            partitions=st.lists(
                st.builds(
                    LastMirrorEpochsPartition,
                    partition_index=st.integers(0, 2**31 - 1),
                    last_mirror_epoch=st.integers(-1, 2**31 - 1),
                ),
                max_size=4,
            ).map(tuple),
        ),
        max_size=4,
    ).map(tuple),
)
state_values = st.builds(
    MirrorPartitionStateValue,
    topic_name=names,
    partition=st.integers(0, 2**31 - 1),
    state=st.sampled_from(MirrorPartitionStateId),
)


@given(
    record=st.one_of(
        st.tuples(st.builds(LastMirrorEpochsKey, mirror_name=names), epochs_values),
        st.tuples(st.builds(MirrorPartitionStateKey, mirror_name=names), state_values),
    )
)
def test_mirror_state_records_round_trip(record: tuple[Any, Any]) -> None:
    key, value = record
    assert decode_mirror_state_record(
        encode_mirror_state_key(key), encode_mirror_state_value(value)
    ) == (key, value)


def test_mirror_state_rejects_unknown_type_version_and_garbage() -> None:
    with pytest.raises(MirrorStateRecordError):
        decode_mirror_state_key(b"\x00\x07\x00\x01m")
    with pytest.raises(MirrorStateRecordError):
        decode_mirror_state_value(2, b"\x00\x01" + b"\x00" * 10)
    with pytest.raises(MirrorStateRecordError):
        decode_mirror_state_key(b"\x00")
    with pytest.raises(MirrorStateRecordError):
        decode_mirror_state_key(
            encode_mirror_state_key(MirrorPartitionStateKey(mirror_name="m")) + b"x"
        )


def test_partition_state_ids_are_the_persisted_numbers() -> None:
    assert [s.value for s in MirrorPartitionStateId] == [0, 1, 2, 3, 4, 5, 6, 16]
