"""A Metadata response spliced from pre-encoded topic entries is byte for byte kio's
encoding of the whole body, for every version the broker serves, and counts the same
error codes."""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mirrorsim.broker.handlers.base import HANDLERS
from mirrorsim.broker.handlers.metadata import METADATA_KEY
from mirrorsim.broker.metrics.requests import error_counts
from mirrorsim.protocol.builder import build
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.framing import encode_response
from mirrorsim.protocol.messages.metadata_topics import (
    MetadataSpliceError,
    SplicedMetadataResponse,
    encode_topic,
)
from mirrorsim.protocol.registry import response_class

SERVED = HANDLERS[METADATA_KEY]
VERSIONS = range(SERVED.min_version, SERVED.max_version + 1)
NULLABLE_NAME_SINCE = 12
"""A topic queried by an unknown id comes back without a name from v12."""

INT32 = st.integers(-(2**31), 2**31 - 1)
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
CODES = st.sampled_from(list(ErrorCode))
NODES = st.lists(INT32, max_size=4)

partitions = st.fixed_dictionaries(
    {
        "error_code": CODES,
        "partition_index": INT32,
        "leader_id": INT32,
        "leader_epoch": INT32,
        "replica_nodes": NODES,
        "isr_nodes": NODES,
        "offline_replicas": NODES,
    }
)


def topics(version: int) -> st.SearchStrategy[dict[str, Any]]:
    names = st.none() | TEXT if version >= NULLABLE_NAME_SINCE else TEXT
    return st.fixed_dictionaries(
        {
            "error_code": CODES,
            "name": names,
            "topic_id": st.uuids(),
            "is_internal": st.booleans(),
            "partitions": st.lists(partitions, max_size=6),
            "topic_authorized_operations": INT32,
        }
    )


rest_of_body = st.fixed_dictionaries(
    {
        "throttle_time": st.integers(0, 2**31 - 1).map(
            lambda ms: datetime.timedelta(milliseconds=ms)
        ),
        "brokers": st.lists(
            st.fixed_dictionaries(
                {"node_id": INT32, "host": TEXT, "port": INT32, "rack": st.none() | TEXT}
            ),
            max_size=3,
        ),
        "cluster_id": st.none() | TEXT,
        "controller_id": INT32,
        "cluster_authorized_operations": INT32,
        "error_code": CODES,
    }
)


def whole_and_spliced(
    version: int, rest: dict[str, Any], described: list[dict[str, Any]]
) -> tuple[Any, SplicedMetadataResponse]:
    cls = response_class(METADATA_KEY, version)
    assert cls is not None
    whole = build(cls, {**rest, "topics": described})
    spliced = SplicedMetadataResponse(
        build(cls, {**rest, "topics": []}),
        tuple(encode_topic(version, topic) for topic in described),
    )
    return whole, spliced


@settings(max_examples=300)
@given(data=st.data())
def test_the_spliced_response_is_kios_encoding_of_the_whole_body(data: st.DataObject) -> None:
    version = data.draw(st.sampled_from(VERSIONS), label="version")
    rest = data.draw(rest_of_body, label="rest")
    described = data.draw(st.lists(topics(version), max_size=5), label="topics")
    whole, spliced = whole_and_spliced(version, rest, described)
    correlation_id = data.draw(INT32)

    def encoded(body: Any) -> bytes:
        return encode_response(body, api_version=version, correlation_id=correlation_id)

    assert encoded(spliced) == encoded(whole)
    assert error_counts(spliced) == error_counts(whole)
    if hasattr(whole, "throttle_time"):
        throttle = datetime.timedelta(milliseconds=data.draw(st.integers(0, 2**31 - 1)))
        assert spliced.throttle_time == whole.throttle_time
        assert encoded(spliced.with_throttle_time(throttle)) == encoded(
            dataclasses.replace(whole, throttle_time=throttle)
        )
    else:
        assert not hasattr(spliced, "throttle_time")


@pytest.mark.parametrize("version", VERSIONS)
def test_an_entry_larger_than_a_copied_write_is_spliced_too(version: int) -> None:
    """Entries of 4 KiB and more go out as their own buffer, not through the copy."""
    topic = {
        "error_code": ErrorCode.NONE,
        "name": "large",
        "topic_id": uuid.uuid4(),
        "partitions": [
            {
                "error_code": ErrorCode.NONE,
                "partition_index": p,
                "leader_id": 1,
                "leader_epoch": 3,
                "replica_nodes": [1, 2, 3],
                "isr_nodes": [1, 2, 3],
                "offline_replicas": [],
            }
            for p in range(300)
        ],
    }
    rest = {
        "throttle_time": datetime.timedelta(0),
        "brokers": [{"node_id": 1, "host": "localhost", "port": 9092, "rack": None}],
        "cluster_id": "cluster",
        "controller_id": 1,
        "cluster_authorized_operations": 0,
        "error_code": ErrorCode.NONE,
    }
    whole, spliced = whole_and_spliced(version, rest, [topic, {**topic, "name": "other"}])
    assert len(spliced.topics[0].data) > 4096
    assert encode_response(spliced, api_version=version, correlation_id=1) == encode_response(
        whole, api_version=version, correlation_id=1
    )
    assert spliced.topics[0].error_codes == ((int(ErrorCode.NONE), 301),)


def test_what_cannot_be_spliced_fails_loudly() -> None:
    rest = {
        "throttle_time": datetime.timedelta(0),
        "brokers": [],
        "cluster_id": None,
        "controller_id": 1,
        "error_code": ErrorCode.NONE,
    }
    topic = {"error_code": ErrorCode.NONE, "name": "t", "topic_id": uuid.uuid4(), "partitions": []}
    whole, spliced = whole_and_spliced(12, rest, [topic])
    with pytest.raises(MetadataSpliceError, match="empty topics array"):
        SplicedMetadataResponse(whole, spliced.topics).encoded_body()
    with pytest.raises(MetadataSpliceError, match="another version"):
        SplicedMetadataResponse(spliced.body, (encode_topic(11, topic),)).encoded_body()
    fetch = response_class(1, 12)
    assert fetch is not None
    not_metadata = build(
        fetch,
        {
            "throttle_time": datetime.timedelta(0),
            "error_code": ErrorCode.NONE,
            "session_id": 0,
            "responses": [],
        },
    )
    with pytest.raises(MetadataSpliceError, match="not a Metadata response"):
        SplicedMetadataResponse(not_metadata, ()).encoded_body()
