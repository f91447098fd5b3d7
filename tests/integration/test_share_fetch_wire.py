"""ShareFetch and ShareAcknowledge v1 on the wire against an in-process broker: share
session epochs and their errors, acquired ranges with delivery counts, acknowledgements
piggybacked and standalone, a record another member holds, and a share session that ends
with its connection giving its records back at once."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping
from datetime import timedelta
from typing import Any

import pytest

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.client.connection import BrokerConnection
from mirrorsim.protocol.builder import build_request
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.records.building import build_batch
from mirrorsim.protocol.records.record import Record

PRODUCE, SHARE_FETCH, SHARE_ACKNOWLEDGE, INCREMENTAL_ALTER_CONFIGS = 0, 78, 79, 44
GROUP, TOPIC = "wire-share", "wire-orders"
GROUP_RESOURCE, SET = 32, 0
LOCK_MS = 60_000
"""Longer than any test here: a record comes back only through what the test does."""
ACCEPT, RELEASE = 1, 2


class Member:
    """A share consumer speaking the wire itself, on its own connection."""

    def __init__(self, conn: BrokerConnection, topic_id: uuid.UUID) -> None:
        self.conn = conn
        self.topic_id = topic_id
        self.member_id = str(uuid.uuid4())
        self.epoch = 0

    async def fetch(
        self,
        acks: list[tuple[int, int, list[int]]] | None = None,
        *,
        epoch: int | None = None,
        forget: bool = False,
    ) -> Any:
        partitions = [
            {
                "partition_index": 0,
                "acknowledgement_batches": [
                    {"first_offset": f, "last_offset": last, "acknowledge_types": types}
                    for f, last, types in acks or ()
                ],
            }
        ]
        response = await send(
            self.conn,
            SHARE_FETCH,
            {
                "group_id": GROUP,
                "member_id": self.member_id,
                "share_session_epoch": self.epoch if epoch is None else epoch,
                "max_wait": timedelta(milliseconds=200),
                "min_bytes": 1,
                "max_bytes": 1 << 20,
                "max_records": 500,
                "batch_size": 500,
                "topics": [] if forget else [{"topic_id": self.topic_id, "partitions": partitions}],
                "forgotten_topics_data": [{"topic_id": self.topic_id, "partitions": [0]}]
                if forget
                else [],
            },
        )
        if epoch is None and response.error_code == ErrorCode.NONE:
            self.epoch += 1
        return response

    async def acknowledge(self, acks: list[tuple[int, int, list[int]]], *, epoch: int) -> Any:
        batches = [
            {"first_offset": f, "last_offset": last, "acknowledge_types": types}
            for f, last, types in acks
        ]
        return await send(
            self.conn,
            SHARE_ACKNOWLEDGE,
            {
                "group_id": GROUP,
                "member_id": self.member_id,
                "share_session_epoch": epoch,
                "topics": [
                    {
                        "topic_id": self.topic_id,
                        "partitions": [{"partition_index": 0, "acknowledgement_batches": batches}],
                    }
                ],
            },
        )


async def send(conn: BrokerConnection, api_key: int, fields: Mapping[str, Any]) -> Any:
    version = {PRODUCE: 9, INCREMENTAL_ALTER_CONFIGS: 1}.get(api_key, 1)
    return await conn.send(build_request(api_key, version, fields))


def acquired(response: Any) -> list[tuple[int, int, int]]:
    return [
        (r.first_offset, r.last_offset, r.delivery_count)
        for topic in response.responses
        for p in topic.partitions
        for r in p.acquired_records
    ]


def partition(response: Any) -> Any:
    (topic,) = response.responses
    (data,) = topic.partitions
    return data


@pytest.fixture
async def broker(start_cluster: Any) -> AsyncIterator[Any]:
    cluster = await start_cluster(
        configs={"group.share.record.lock.duration.ms": LOCK_MS, "auto.create.topics.enable": False}
    )
    yield cluster.brokers[0]


async def connect(broker: Any) -> BrokerConnection:
    conn = BrokerConnection(broker.host, broker.port, client_id="share-wire")
    await conn.connect()
    return conn


@pytest.fixture
async def topic_id(broker: Any, wait_for: Any) -> AsyncIterator[uuid.UUID]:
    """A one-partition topic with ten records in one batch, read by the group from the
    earliest offset."""
    async with Admin(f"{broker.host}:{broker.port}") as admin:
        await admin.create_topics([NewTopic(TOPIC, 1, 1)])
    await wait_for(lambda: broker.replica_manager.topic_id(TOPIC) is not None, timeout=10)
    conn = await connect(broker)
    try:
        reset = await send(
            conn,
            INCREMENTAL_ALTER_CONFIGS,
            {
                "validate_only": False,
                "resources": [
                    {
                        "resource_type": GROUP_RESOURCE,
                        "resource_name": GROUP,
                        "configs": [
                            {
                                "name": "share.auto.offset.reset",
                                "config_operation": SET,
                                "value": "earliest",
                            }
                        ],
                    }
                ],
            },
        )
        assert reset.responses[0].error_code == ErrorCode.NONE
        records = build_batch([Record(i, 1_000, None, f"r{i}".encode()) for i in range(10)]).data
        produced = await send(
            conn,
            PRODUCE,
            {
                "transactional_id": None,
                "acks": -1,
                "timeout": timedelta(seconds=10),
                "topic_data": [
                    {
                        "name": TOPIC,
                        "partition_data": [{"index": 0, "records": records}],
                    }
                ],
            },
        )
        assert produced.responses[0].partition_responses[0].error_code == ErrorCode.NONE
    finally:
        await conn.close()
    topic = broker.replica_manager.topic_id(TOPIC)
    assert topic is not None
    yield topic


async def test_session_epochs_are_checked_and_acknowledgements_move_records(
    broker: Any, topic_id: uuid.UUID
) -> None:
    conn = await connect(broker)
    try:
        member = Member(conn, topic_id)
        refused = await member.fetch([(0, 0, [ACCEPT])], epoch=0)
        assert refused.error_code == ErrorCode.INVALID_REQUEST
        assert (await member.fetch(epoch=5)).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
        first = await member.fetch()
        assert first.error_code == ErrorCode.NONE
        assert first.acquisition_lock_timeout == timedelta(milliseconds=LOCK_MS)
        assert acquired(first) == [(0, 9, 1)]
        assert partition(first).records
        stale = await member.fetch(epoch=7)
        assert stale.error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
        released = await member.fetch([(0, 0, [RELEASE]), (1, 9, [ACCEPT])])
        assert partition(released).acknowledge_error_code == ErrorCode.NONE
        assert acquired(released) == [(0, 0, 2)]
        again = await member.acknowledge([(1, 1, [ACCEPT])], epoch=member.epoch)
        assert partition(again).error_code == ErrorCode.INVALID_RECORD_STATE
        refused_ack = await member.acknowledge([(0, 0, [ACCEPT])], epoch=0)
        assert refused_ack.error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    finally:
        await conn.close()


async def test_a_record_held_by_one_member_is_refused_to_another(
    broker: Any, topic_id: uuid.UUID
) -> None:
    first_conn, second_conn = await connect(broker), await connect(broker)
    try:
        first, second = Member(first_conn, topic_id), Member(second_conn, topic_id)
        assert acquired(await first.fetch()) == [(0, 9, 1)]
        assert acquired(await second.fetch()) == []
        stolen = await second.acknowledge([(0, 9, [ACCEPT])], epoch=second.epoch)
        assert partition(stolen).error_code == ErrorCode.INVALID_RECORD_STATE
        second.epoch += 1
        closing = await first.acknowledge([(0, 4, [ACCEPT])], epoch=-1)
        assert partition(closing).error_code == ErrorCode.NONE
        assert acquired(await second.fetch()) == [(5, 9, 2)]
    finally:
        await first_conn.close()
        await second_conn.close()


async def test_a_forgotten_partition_keeps_the_members_records_until_it_acknowledges(
    broker: Any, topic_id: uuid.UUID
) -> None:
    """A consumer whose assignment moved on may still acknowledge what it was handed: the
    records stay its own, and no other member gets them meanwhile."""
    first_conn, second_conn = await connect(broker), await connect(broker)
    try:
        first, second = Member(first_conn, topic_id), Member(second_conn, topic_id)
        assert acquired(await first.fetch()) == [(0, 9, 1)]
        assert acquired(await first.fetch(forget=True)) == []
        assert acquired(await second.fetch()) == []
        late = await first.acknowledge([(0, 9, [ACCEPT])], epoch=first.epoch)
        assert partition(late).error_code == ErrorCode.NONE
        assert acquired(await second.fetch()) == []
    finally:
        await first_conn.close()
        await second_conn.close()


async def test_a_closed_connection_gives_its_records_back_at_once(
    broker: Any, topic_id: uuid.UUID, wait_for: Any
) -> None:
    holder_conn, taker_conn = await connect(broker), await connect(broker)
    try:
        holder, taker = Member(holder_conn, topic_id), Member(taker_conn, topic_id)
        assert acquired(await holder.fetch()) == [(0, 9, 1)]
        assert acquired(await taker.fetch()) == []
        await holder_conn.close()
        await wait_for(
            lambda: not broker.share_sessions.get(GROUP, holder.member_id),
            timeout=10,
            message="the holder's share session ends with its connection",
        )
        assert acquired(await taker.fetch()) == [(0, 9, 2)]
    finally:
        await taker_conn.close()
