"""Admin's consumer-group methods on the wire at old and new versions (tiny broker)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from helpers.tiny_broker import TinyBroker, TopicSpec, response

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import OffsetAndMetadata, TopicPartition
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.framing import Request

FIND_COORDINATOR, OFFSET_COMMIT, OFFSET_FETCH = 10, 8, 9
DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS = 15, 16, 42
FAST = {"retry.backoff.ms": "1", "retry.backoff.max.ms": "5", "default.api.timeout.ms": "5000"}


class GroupBroker(TinyBroker):
    """Coordinates every group itself and stores committed offsets by (topic, partition)."""

    def __init__(self) -> None:
        super().__init__()
        self.topics = [TopicSpec("orders", partitions=2)]
        self.committed: dict[tuple[str, int], int] = {}
        self.handlers.update(
            {
                FIND_COORDINATOR: self.find_coordinator,
                OFFSET_COMMIT: self.offset_commit,
                OFFSET_FETCH: self.offset_fetch,
                DELETE_GROUPS: self.delete_groups,
                LIST_GROUPS: self.list_groups,
            }
        )
        for key, versions in {
            FIND_COORDINATOR: (0, 6),
            OFFSET_COMMIT: (2, 10),
            OFFSET_FETCH: (1, 10),
            DELETE_GROUPS: (0, 2),
            LIST_GROUPS: (0, 5),
            DESCRIBE_GROUPS: (0, 6),
        }.items():
            self.api_versions[key] = versions

    def name_of(self, topic: Any) -> str:
        if hasattr(topic, "name"):
            return str(topic.name)
        return next(t.name for t in self.topics if t.topic_id == topic.topic_id)

    def topic_key(self, name: str, version: int, threshold: int) -> dict[str, Any]:
        if version >= threshold:
            return {"topic_id": next(t.topic_id for t in self.topics if t.name == name)}
        return {"name": name}

    async def find_coordinator(self, request: Request) -> Any:
        me = {"node_id": self.node_id, "host": "127.0.0.1", "port": self.port}
        found = {"error_code": 0, "error_message": None, **me}
        fields = {
            **found,
            "coordinators": [
                {"key": k, **found} for k in getattr(request.body, "coordinator_keys", ())
            ],
        }
        return response(FIND_COORDINATOR, request.header.api_version, fields)

    async def offset_commit(self, request: Request) -> Any:
        version = request.header.api_version
        topics = []
        for t in request.body.topics:
            name = self.name_of(t)
            for p in t.partitions:
                self.committed[(name, int(p.partition_index))] = int(p.committed_offset)
            partitions = [
                {"partition_index": p.partition_index, "error_code": 0} for p in t.partitions
            ]
            topics.append({**self.topic_key(name, version, 10), "partitions": partitions})
        return response(OFFSET_COMMIT, version, {"topics": topics})

    async def offset_fetch(self, request: Request) -> Any:
        version = request.header.api_version
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (name, partition), offset in sorted(self.committed.items()):
            by_topic.setdefault(name, []).append(
                {
                    "partition_index": partition,
                    "committed_offset": offset,
                    "committed_leader_epoch": -1,
                    "metadata": "",
                    "error_code": 0,
                }
            )
        topics = [
            {**self.topic_key(name, version, 10), "partitions": parts}
            for name, parts in by_topic.items()
        ]
        if version >= 8:
            group = {"group_id": request.body.groups[0].group_id, "topics": topics, "error_code": 0}
            return response(OFFSET_FETCH, version, {"groups": [group]})
        return response(OFFSET_FETCH, version, {"topics": topics, "error_code": 0})

    async def delete_groups(self, request: Request) -> Any:
        results = [
            {"group_id": g, "error_code": 0 if g == "g1" else ErrorCode.GROUP_ID_NOT_FOUND}
            for g in request.body.groups_names
        ]
        return response(DELETE_GROUPS, request.header.api_version, {"results": results})

    async def list_groups(self, request: Request) -> Any:
        group = {
            "group_id": "g1",
            "protocol_type": "consumer",
            "group_state": "Empty",
            "group_type": "classic",
        }
        return response(
            LIST_GROUPS, request.header.api_version, {"error_code": 0, "groups": [group]}
        )


@pytest.fixture(params=["oldest", "newest"])
async def broker(request: pytest.FixtureRequest) -> AsyncIterator[GroupBroker]:
    server = GroupBroker()
    if request.param == "oldest":
        for key in (FIND_COORDINATOR, OFFSET_COMMIT, OFFSET_FETCH, DELETE_GROUPS, LIST_GROUPS):
            low = server.api_versions[key][0]
            server.api_versions[key] = (low, low)
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def admin(broker: GroupBroker) -> AsyncIterator[Admin]:
    async with Admin(bootstrap=f"127.0.0.1:{broker.port}", config=FAST) as started:
        yield started


async def test_alter_then_list_group_offsets(broker: GroupBroker, admin: Admin) -> None:
    wanted = {TopicPartition("orders", 0): OffsetAndMetadata(5), TopicPartition("orders", 1): 9}
    results = await admin.alter_consumer_group_offsets("g1", wanted)
    assert results == {TopicPartition("orders", 0): None, TopicPartition("orders", 1): None}
    assert broker.committed == {("orders", 0): 5, ("orders", 1): 9}
    offsets = await admin.list_consumer_group_offsets("g1")
    assert {tp: om.offset for tp, om in offsets.items()} == {
        TopicPartition("orders", 0): 5,
        TopicPartition("orders", 1): 9,
    }


async def test_list_and_delete_groups(admin: Admin) -> None:
    (listing,) = await admin.list_consumer_groups()
    assert (listing.group_id, listing.protocol_type) == ("g1", "consumer")
    results = await admin.delete_consumer_groups(["g1", "g2"])
    assert results["g1"] is None
    assert results["g2"] is not None and results["g2"].code is ErrorCode.GROUP_ID_NOT_FOUND
