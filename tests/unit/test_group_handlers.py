"""Every advertised version of the group APIs, through the handlers and the wire codec.

A consumer's whole life (join, sync, heartbeat, commit, fetch, describe, list, leave,
delete) runs once per version step, and every response is encoded and decoded again, so
a field a version requires but the handler forgot fails here rather than in a client.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from mirrorsim.broker.group import GroupConfig, GroupCoordinator, InMemoryOffsetStore, ManualClock
from mirrorsim.broker.handlers import groups as handlers
from mirrorsim.broker.handlers.base import HANDLERS, RequestContext
from mirrorsim.protocol.builder import build_request
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.framing import RequestHeader, decode_response, encode_response

pytestmark = pytest.mark.timeout(20)

SUBSCRIPTION = struct.pack(">hih2si", 0, 1, 2, b"t1", -1)


@pytest.fixture
async def coordinator() -> AsyncIterator[GroupCoordinator]:
    coordinator = GroupCoordinator(
        offset_store=InMemoryOffsetStore(),
        clock=ManualClock(),
        config=GroupConfig(initial_rebalance_delay_ms=0),
    )
    await coordinator.start()
    yield coordinator
    await coordinator.stop()


TOPICS = {
    "t1": SimpleNamespace(topic_id=uuid.uuid4(), partitions=[0]),
    "t": SimpleNamespace(topic_id=uuid.uuid4(), partitions=[0, 1, 2, 3]),
}
"""The metadata view's topic records, as far as the group handlers read them."""


async def _unchanged_metadata() -> None:
    """The store holds nothing the snapshot lacks."""


async def call(
    coordinator: GroupCoordinator, api_key: int, version: int, fields: dict[str, Any]
) -> Any:
    """Clamp `version` into the advertised range, run the handler, round-trip the answer."""
    registration = HANDLERS[api_key]
    version = max(registration.min_version, min(version, registration.max_version))
    request = build_request(api_key, version, fields)
    ctx = RequestContext(
        header=RequestHeader(api_key, version, 7, "client"),
        broker=SimpleNamespace(  # no authorizer; the topics the tests commit offsets of
            groups=coordinator,
            config={}.get,
            snapshot=SimpleNamespace(topics=TOPICS),
            refresh_metadata=_unchanged_metadata,
        ),
        client_host="127.0.0.1",
    )
    response = await registration.handler(ctx, request)
    frame = encode_response(response, api_version=version, correlation_id=7)
    correlation_id, decoded = decode_response(frame[4:], api_key=api_key, api_version=version)
    assert correlation_id == 7
    return decoded


@pytest.mark.parametrize("version", range(10))
async def test_consumer_lifecycle_at_every_version(
    coordinator: GroupCoordinator, version: int
) -> None:
    group = f"g{version}"
    join_fields = {
        "group_id": group,
        "session_timeout": timedelta(seconds=10),
        "rebalance_timeout": timedelta(seconds=30),
        "member_id": "",
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": SUBSCRIPTION}],
    }
    joined = await call(coordinator, handlers.JOIN_GROUP, version, join_fields)
    if joined.error_code == ErrorCode.MEMBER_ID_REQUIRED:
        assert version >= 4
        joined = await call(
            coordinator,
            handlers.JOIN_GROUP,
            version,
            {**join_fields, "member_id": joined.member_id},
        )
    assert joined.error_code == ErrorCode.NONE
    assert joined.leader == joined.member_id
    assert [m.metadata for m in joined.members] == [SUBSCRIPTION]
    member = {
        "group_id": group,
        "generation_id": joined.generation_id,
        "member_id": joined.member_id,
    }

    synced = await call(
        coordinator,
        handlers.SYNC_GROUP,
        version,
        {**member, "assignments": [{"member_id": joined.member_id, "assignment": b"t1-0"}]},
    )
    assert (synced.error_code, synced.assignment) == (ErrorCode.NONE, b"t1-0")
    beat = await call(coordinator, handlers.HEARTBEAT, version, member)
    assert beat.error_code == ErrorCode.NONE

    committed = await call(
        coordinator,
        handlers.OFFSET_COMMIT,
        version,
        {
            "group_id": group,
            "generation_id_or_member_epoch": joined.generation_id,
            "member_id": joined.member_id,
            "topics": [
                {
                    "name": "t1",
                    "partitions": [
                        {"partition_index": 0, "committed_offset": 42, "committed_metadata": "m"}
                    ],
                }
            ],
        },
    )
    assert committed.topics[0].partitions[0].error_code == ErrorCode.NONE

    wanted = [{"name": "t1", "partition_indexes": [0, 1]}]
    fetch_fields = (
        {"groups": [{"group_id": group, "topics": wanted}]}
        if version >= 8
        else {"group_id": group, "topics": wanted}
    )
    fetched = await call(coordinator, handlers.OFFSET_FETCH, version, fetch_fields)
    topics = fetched.groups[0].topics if version >= 8 else fetched.topics
    assert [(p.partition_index, p.committed_offset, p.metadata) for p in topics[0].partitions] == [
        (0, 42, "m"),
        (1, -1, ""),
    ]

    described = await call(
        coordinator,
        handlers.DESCRIBE_GROUPS,
        version,
        {"groups": [group, "nope"], "include_authorized_operations": False},
    )
    mine, missing = described.groups
    assert (mine.group_state, mine.protocol_data) == ("Stable", "range")
    assert mine.members[0].member_assignment == b"t1-0"
    assert missing.group_state == "Dead"
    listed = await call(coordinator, handlers.LIST_GROUPS, version, {"states_filter": ["Stable"]})
    assert group in {g.group_id for g in listed.groups}

    if version >= 3:
        left = await call(
            coordinator,
            handlers.LEAVE_GROUP,
            version,
            {"group_id": group, "members": [{"member_id": joined.member_id}]},
        )
        assert [m.error_code for m in left.members] == [ErrorCode.NONE]
    else:
        left = await call(
            coordinator,
            handlers.LEAVE_GROUP,
            version,
            {"group_id": group, "member_id": joined.member_id},
        )
        assert left.error_code == ErrorCode.NONE

    dropped = await call(
        coordinator,
        handlers.OFFSET_DELETE,
        0,
        {"group_id": group, "topics": [{"name": "t1", "partitions": [{"partition_index": 0}]}]},
    )
    assert dropped.error_code == ErrorCode.NONE
    deleted = await call(coordinator, handlers.DELETE_GROUPS, version, {"groups_names": [group]})
    assert [(r.group_id, r.error_code) for r in deleted.results] == [(group, ErrorCode.NONE)]


async def test_offset_fetch_of_all_partitions(coordinator: GroupCoordinator) -> None:
    commit = {
        "group_id": "simple",
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "topics": [
            {
                "name": "t",
                "partitions": [
                    {"partition_index": 3, "committed_offset": 9, "committed_metadata": None}
                ],
            }
        ],
    }
    await call(coordinator, handlers.OFFSET_COMMIT, 2, commit)
    fetched = await call(
        coordinator, handlers.OFFSET_FETCH, 7, {"group_id": "simple", "topics": None}
    )
    assert [(t.name, [p.committed_offset for p in t.partitions]) for t in fetched.topics] == [
        ("t", [9])
    ]
