"""Client quotas on the request paths, over a real socket: a request over the quota is
answered at once with ``throttle_time_ms`` and the connection then serves nothing for that
time (KIP-219), even to a client that ignores the throttle time; a throttled fetch answers
empty and the same fetch later returns the records; ``request_percentage`` throttles any
request on its event-loop time, at most one quota window; other clients are untouched."""

from __future__ import annotations

import asyncio
import datetime
import time
from typing import Any

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic, QuotaAlteration, quota_entity
from mirrorsim.client.connection import BrokerConnection
from mirrorsim.client.sasl import SaslSettings
from mirrorsim.protocol.builder import build_request
from mirrorsim.protocol.records import Record, build_batch

RATE = 10_000
"""Bytes per second: a 30 kB request in the first quota window is 3x over, 2 s of throttle."""


def _produce(topic: str, size: int) -> Any:
    batch = build_batch([Record(0, 1_000, None, b"x" * size)])
    return build_request(
        0,
        9,
        {
            "transactional_id": None,
            "acks": 1,
            "timeout": datetime.timedelta(seconds=10),
            "topic_data": [
                {"name": topic, "partition_data": [{"index": 0, "records": batch.data}]}
            ],
        },
    )


def _fetch(topic: str) -> Any:
    return build_request(
        1,
        11,
        {
            "replica_id": -1,
            "max_wait": datetime.timedelta(milliseconds=0),
            "min_bytes": 1,
            "max_bytes": 10_000_000,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": topic,
                    "partitions": [
                        {
                            "partition": 0,
                            "current_leader_epoch": -1,
                            "fetch_offset": 0,
                            "log_start_offset": -1,
                            "partition_max_bytes": 10_000_000,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        },
    )


async def _connect(broker: Any, client_id: str) -> BrokerConnection:
    connection = BrokerConnection(broker.host, broker.port, client_id=client_id)
    await connection.connect()
    return connection


async def _timed(connection: BrokerConnection, request: Any) -> tuple[Any, float]:
    response = await connection.send(request)
    return response, time.monotonic()


def _metadata() -> Any:
    return build_request(
        3,
        12,
        {
            "topics": None,
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        },
    )


async def _setup(cluster: Any, quota: dict[str, float]) -> None:
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        (await admin.create_topics([NewTopic("quota", 1, 1)])).all()
        (
            await admin.alter_client_quotas(
                [QuotaAlteration(quota_entity(client_id="capped"), quota)]
            )
        ).all()


async def test_a_producer_over_its_quota_is_throttled_and_its_connection_muted(
    start_cluster: Any,
) -> None:
    cluster = await start_cluster()
    await _setup(cluster, {"producer_byte_rate": RATE})
    broker = cluster.brokers[0]
    capped = await _connect(broker, "capped")
    free = await _connect(broker, "free")
    try:
        # pipelined, as a client that ignores throttle_time_ms would send them
        first, second = await asyncio.gather(
            _timed(capped, _produce("quota", 30_000)), _timed(capped, _produce("quota", 10))
        )
        throttle = first[0].throttle_time.total_seconds()
        assert 1.5 <= throttle <= 2.5
        assert first[0].responses[0].partition_responses[0].error_code == 0
        # the second request was read and served only once the throttle time had passed
        assert second[1] - first[1] >= throttle * 0.9
        unlimited, _ = await _timed(free, _produce("quota", 30_000))
        assert unlimited.throttle_time.total_seconds() == 0
    finally:
        await capped.close()
        await free.close()


async def test_a_throttled_fetch_answers_empty_and_the_records_come_later(
    start_cluster: Any,
) -> None:
    cluster = await start_cluster()
    await _setup(cluster, {"consumer_byte_rate": 2 * RATE})
    broker = cluster.brokers[0]
    writer = await _connect(broker, "writer")
    capped = await _connect(broker, "capped")
    try:
        written = await writer.send(_produce("quota", 50_000))
        assert written.responses[0].partition_responses[0].error_code == 0
        throttled = await capped.send(_fetch("quota"))
        assert throttled.throttle_time.total_seconds() > 1.0
        assert list(throttled.responses) == []
        # the connection was muted for the throttle time; the same fetch now gets the data
        served = await capped.send(_fetch("quota"))
        assert served.throttle_time.total_seconds() == 0
        assert len(served.responses[0].partitions[0].records) > 50_000
    finally:
        await writer.close()
        await capped.close()


async def test_request_percentage_throttles_on_event_loop_time_for_one_window_at_most(
    start_cluster: Any,
) -> None:
    cluster = await start_cluster()
    # 0.001 % of one thread: 10 microseconds of handling per second
    await _setup(cluster, {"request_percentage": 0.001})
    broker = cluster.brokers[0]
    capped = await _connect(broker, "capped")
    free = await _connect(broker, "free")
    try:
        first, second = await asyncio.gather(
            _timed(capped, _metadata()), _timed(capped, _metadata())
        )
        # far over the quota, but a request quota throttles one window (1 s) at most
        assert first[0].throttle_time.total_seconds() == 1.0
        assert second[1] - first[1] >= 0.9
        unlimited, _ = await _timed(free, _metadata())
        assert unlimited.throttle_time.total_seconds() == 0
    finally:
        await capped.close()
        await free.close()


async def test_user_quotas_follow_the_authenticated_principal(start_cluster: Any) -> None:
    """A quota on user alice meters alice's connections whatever their client id; the
    default user's quota meters every other user on its own; alice's own quota wins over
    the default."""
    cluster = await start_cluster(
        configs={
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "sasl.users": "alice:alice-secret,bob:bob-secret",
        }
    )
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        (await admin.create_topics([NewTopic("quota", 1, 1)])).all()
        alterations = [
            QuotaAlteration(quota_entity(user="alice"), {"producer_byte_rate": RATE}),
            QuotaAlteration(quota_entity(user=None), {"producer_byte_rate": 100 * RATE}),
        ]
        (await admin.alter_client_quotas(alterations)).all()
    broker = cluster.brokers[0]
    port = broker.server.endpoints()["SASL_PLAINTEXT"][1]

    async def as_user(user: str, client_id: str) -> BrokerConnection:
        connection = BrokerConnection(
            "127.0.0.1",
            port,
            client_id=client_id,
            sasl=SaslSettings("PLAIN", user, f"{user}-secret"),
        )
        await connection.connect()
        return connection

    alice_one = await as_user("alice", "one")
    alice_two = await as_user("alice", "two")
    bob = await as_user("bob", "one")
    try:
        first = await alice_one.send(_produce("quota", 8_000))
        assert first.throttle_time.total_seconds() == 0
        # the same user under another client id shares alice's rate: now over 10 kB/s
        shared = await alice_two.send(_produce("quota", 8_000))
        assert shared.throttle_time.total_seconds() > 0.4
        # bob falls under the default user quota (1 MB/s), metered apart from alice
        other = await bob.send(_produce("quota", 30_000))
        assert other.throttle_time.total_seconds() == 0
    finally:
        for connection in (alice_one, alice_two, bob):
            await connection.close()
