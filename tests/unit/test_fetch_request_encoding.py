"""A Fetch request encoded from a fetcher's positions is kio's encoding of the same
request, header and size prefix included, and the broker decodes it to those positions."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from helpers.protocol_strategies import INT8, INT32, INT64, TEXT
from hypothesis import given, settings
from hypothesis import strategies as st

from mirrorsim.protocol.builder import build_request
from mirrorsim.protocol.framing import decode_request, encode_request
from mirrorsim.protocol.messages.fetch_request import (
    MAX_VERSION,
    MIN_VERSION,
    FetchRequestBody,
    FetchRequestPartition,
    FetchRequestTopic,
    ForgottenTopic,
)

VERSIONS = range(MIN_VERSION, MAX_VERSION + 1)
UNSET_OR_32 = st.just(-1) | INT32
UNSET_OR_64 = st.just(-1) | INT64

partitions = st.builds(
    FetchRequestPartition,
    partition=INT32,
    fetch_offset=INT64,
    partition_max_bytes=INT32,
    current_leader_epoch=UNSET_OR_32,
    last_fetched_epoch=UNSET_OR_32,
    log_start_offset=UNSET_OR_64,
    mirror_leader_epoch=UNSET_OR_32,
)
topics = st.builds(
    FetchRequestTopic, topic=TEXT, topic_id=st.uuids(), partitions=st.lists(partitions, max_size=4)
)
forgotten = st.builds(
    ForgottenTopic, topic=TEXT, topic_id=st.uuids(), partitions=st.lists(INT32, max_size=4)
)


@st.composite
def requests(draw: st.DrawFn) -> FetchRequestBody:
    return FetchRequestBody(
        version=draw(st.sampled_from(VERSIONS)),
        max_wait_ms=draw(st.integers(0, 2**31 - 1)),
        min_bytes=draw(INT32),
        max_bytes=draw(INT32),
        topics=draw(st.lists(topics, max_size=3)),
        isolation_level=draw(INT8),
        session_id=draw(INT32),
        session_epoch=draw(INT32),
        forgotten=draw(st.lists(forgotten, max_size=2)),
        replica_id=draw(UNSET_OR_32),
        replica_epoch=draw(UNSET_OR_64),
        rack_id=draw(TEXT),
    )


def kio_request(body: FetchRequestBody) -> Any:
    """The same request as a kio entity, built the way the fetchers built one."""
    return build_request(
        1,
        body.version,
        {
            "replica_id": body.replica_id,
            "replica_state": {"replica_id": body.replica_id, "replica_epoch": body.replica_epoch},
            "max_wait": datetime.timedelta(milliseconds=body.max_wait_ms),
            "min_bytes": body.min_bytes,
            "max_bytes": body.max_bytes,
            "isolation_level": body.isolation_level,
            "session_id": body.session_id,
            "session_epoch": body.session_epoch,
            "topics": [
                {
                    "topic": t.topic,
                    "topic_id": t.topic_id,
                    "partitions": [
                        {
                            "partition": p.partition,
                            "current_leader_epoch": p.current_leader_epoch,
                            "fetch_offset": p.fetch_offset,
                            "last_fetched_epoch": p.last_fetched_epoch,
                            "log_start_offset": p.log_start_offset,
                            "partition_max_bytes": p.partition_max_bytes,
                            "mirror_leader_epoch": p.mirror_leader_epoch,
                        }
                        for p in t.partitions
                    ],
                }
                for t in body.topics
            ],
            "forgotten_topics_data": [
                {"topic": f.topic, "topic_id": f.topic_id, "partitions": list(f.partitions)}
                for f in body.forgotten
            ],
            "rack_id": body.rack_id,
        },
    )


def frame(body: Any, version: int, client_id: str | None) -> bytes:
    return encode_request(body, api_version=version, correlation_id=7, client_id=client_id)


@settings(max_examples=400, deadline=None)
@given(body=requests(), client_id=st.none() | TEXT)
def test_every_version_encodes_as_kio_does(body: FetchRequestBody, client_id: str | None) -> None:
    assert frame(body, body.version, client_id) == frame(kio_request(body), body.version, client_id)


@settings(max_examples=100, deadline=None)
@given(body=requests())
def test_the_broker_reads_back_the_positions_it_was_sent(body: FetchRequestBody) -> None:
    request = decode_request(frame(body, body.version, "mirror")[4:])
    assert (request.header.api_key, request.header.api_version) == (1, body.version)
    assert request.header.client_id == "mirror"
    read = [
        (int(p.partition), int(p.fetch_offset)) for t in request.body.topics for p in t.partitions
    ]
    assert read == [(p.partition, p.fetch_offset) for t in body.topics for p in t.partitions]


@pytest.mark.parametrize("version", [3, 20])
def test_a_version_without_its_layout_is_refused(version: int) -> None:
    with pytest.raises(ValueError, match="no FetchRequestBody of version"):
        FetchRequestBody(version=version, max_wait_ms=0, min_bytes=1, max_bytes=1, topics=())
