"""The data path against a real broker: Produce, Fetch, ListOffsets with real clients."""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from confluent_kafka import Producer

from mirrorsim.client.connection import BrokerConnection
from mirrorsim.protocol.builder import build_request
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.records import Record, build_batch


@pytest.fixture
async def cluster(start_cluster: Any) -> Any:
    return await start_cluster()


@pytest.fixture
async def admin(cluster: Any) -> AsyncIterator[AIOKafkaAdminClient]:
    client = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    await client.start()
    yield client
    await client.close()


async def create_topic(
    admin: AIOKafkaAdminClient, name: str, configs: dict[str, str] | None = None
) -> None:
    response = await admin.create_topics([NewTopic(name, 1, 1, topic_configs=configs or {})])
    assert [e[1] for e in response.topic_errors] == [ErrorCode.NONE]


async def consume(bootstrap: str, topic: str, count: int, **options: Any) -> list[Any]:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        **options,
    )
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, 0)])
        received: list[Any] = []
        while len(received) < count:
            batch = await asyncio.wait_for(consumer.getmany(timeout_ms=1000), 10)
            for messages in batch.values():
                received.extend(messages)
        return received
    finally:
        await consumer.stop()


@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4", "zstd"])
async def test_aiokafka_round_trip(
    cluster: Any, admin: AIOKafkaAdminClient, codec: str | None
) -> None:
    topic = f"round-trip-{codec or 'none'}"
    await create_topic(admin, topic)
    producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap, compression_type=codec)
    await producer.start()
    try:
        sent = [
            await producer.send_and_wait(
                topic, f"value-{i}".encode(), key=b"k", headers=[("h", b"1")]
            )
            for i in range(20)
        ]
    finally:
        await producer.stop()
    assert [m.offset for m in sent] == list(range(20))
    received = await consume(cluster.bootstrap, topic, 20)
    assert [m.value for m in received] == [f"value-{i}".encode() for i in range(20)]
    assert [m.offset for m in received] == list(range(20))
    assert received[0].headers == (("h", b"1"),)


async def test_long_poll_wakes_on_append(
    cluster: Any, admin: AIOKafkaAdminClient, wait_for: Any
) -> None:
    await create_topic(admin, "long-poll")
    manager = cluster.brokers[0].replica_manager
    consumer = AIOKafkaConsumer(
        bootstrap_servers=cluster.bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        fetch_max_wait_ms=30_000,
    )
    await consumer.start()
    producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap)
    await producer.start()
    try:
        consumer.assign([TopicPartition("long-poll", 0)])
        waiting = asyncio.create_task(consumer.getone())
        await wait_for(
            lambda: manager.delayed_operation_count("long-poll", 0) > 0, 10, "a parked fetch"
        )
        assert not waiting.done()
        await producer.send_and_wait("long-poll", b"after the fetch started")
        message = await asyncio.wait_for(waiting, 10)
        assert message.value == b"after the fetch started"
    finally:
        await producer.stop()
        await consumer.stop()


async def test_small_fetch_limits_still_make_progress(
    cluster: Any, admin: AIOKafkaAdminClient
) -> None:
    await create_topic(admin, "limits")
    producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap, linger_ms=0)
    await producer.start()
    try:
        for i in range(5):
            await producer.send_and_wait("limits", bytes([i]) * 4000)
    finally:
        await producer.stop()
    received = await consume(
        cluster.bootstrap, "limits", 5, fetch_max_bytes=100, max_partition_fetch_bytes=100
    )
    assert [m.value[0] for m in received] == list(range(5))


async def test_list_offsets_earliest_latest_and_by_time(
    cluster: Any, admin: AIOKafkaAdminClient
) -> None:
    await create_topic(admin, "offsets")
    producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap)
    await producer.start()
    try:
        for i, ts in enumerate([1_000, 2_000, 3_000]):
            await producer.send_and_wait("offsets", bytes([i]), timestamp_ms=ts)
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap)
    await consumer.start()
    try:
        tp = TopicPartition("offsets", 0)
        assert await consumer.beginning_offsets([tp]) == {tp: 0}
        assert await consumer.end_offsets([tp]) == {tp: 3}
        found = await consumer.offsets_for_times({tp: 1_500})
        assert (found[tp].offset, found[tp].timestamp) == (1, 2_000)
        assert (await consumer.offsets_for_times({tp: 9_000}))[tp] is None
    finally:
        await consumer.stop()


async def test_read_only_topic_refuses_aiokafka_produce(
    cluster: Any, admin: AIOKafkaAdminClient
) -> None:
    await create_topic(admin, "mirrored")
    broker = cluster.brokers[0]
    partition = broker.replica_manager.partition("mirrored", 0)
    await broker.replica_manager.apply_partition_state(
        replace(partition.state, configs={**partition.state.configs, "mirror.name": "dr"})
    )
    connection = await _connect(cluster)
    try:
        response = await connection.send(_produce_request("mirrored", _idempotent_batch(0)))
    finally:
        await connection.close()
    (topic,) = response.responses
    (result,) = topic.partition_responses
    assert result.error_code == ErrorCode.READ_ONLY_TOPIC


async def test_duplicate_idempotent_batch_returns_original_offset(
    cluster: Any, admin: AIOKafkaAdminClient
) -> None:
    await create_topic(admin, "dedupe")
    connection = await _connect(cluster)
    try:
        init = await connection.send(
            build_request(
                22,
                4,
                {
                    "transactional_id": None,
                    "transaction_timeout": _ms(60_000),
                    "producer_id": -1,
                    "producer_epoch": -1,
                },
            )
        )
        assert init.error_code == ErrorCode.NONE
        pid = int(init.producer_id)
        first = await connection.send(_produce_request("dedupe", _idempotent_batch(pid, seq=0)))
        again = await connection.send(_produce_request("dedupe", _idempotent_batch(pid, seq=0)))
        gap = await connection.send(_produce_request("dedupe", _idempotent_batch(pid, seq=5)))
    finally:
        await connection.close()
    results = [r.responses[0].partition_responses[0] for r in (first, again, gap)]
    assert [(r.error_code, r.base_offset) for r in results[:2]] == [
        (ErrorCode.NONE, 0),
        (ErrorCode.NONE, 0),
    ]
    assert results[2].error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert cluster.brokers[0].replica_manager.partition("dedupe", 0).log_end_offset == 2


async def test_confluent_idempotent_producer(cluster: Any, admin: AIOKafkaAdminClient) -> None:
    await create_topic(admin, "idempotent")

    def produce_all() -> tuple[int, list[tuple[Any, int]]]:
        producer = Producer(
            {"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True, "linger.ms": 5}
        )
        delivered: list[tuple[Any, int]] = []
        for i in range(50):
            producer.produce(
                "idempotent",
                f"m{i}".encode(),
                on_delivery=lambda err, msg: delivered.append((err, msg.offset())),
            )
        return producer.flush(30), delivered

    # librdkafka blocks; the broker runs on this event loop, so the client gets a thread.
    remaining, delivered = await asyncio.to_thread(produce_all)
    assert remaining == 0
    assert [err for err, _ in delivered] == [None] * 50
    assert sorted(offset for _, offset in delivered) == list(range(50))
    received = await consume(cluster.bootstrap, "idempotent", 50)
    assert [m.value for m in received] == [f"m{i}".encode() for i in range(50)]
    assert all(m.offset == i for i, m in enumerate(received))


def _ms(value: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=value)


async def _connect(cluster: Any) -> BrokerConnection:
    broker = cluster.brokers[0]
    host, port = broker.bootstrap.split(":")
    connection = BrokerConnection(host, int(port), client_id="data-path-test")
    await connection.connect()
    return connection


def _idempotent_batch(pid: int, seq: int = 0) -> bytes:
    return build_batch(
        [Record(0, 1_000, None, b"a"), Record(1, 1_000, None, b"b")],
        producer_id=pid,
        producer_epoch=0,
        base_sequence=seq,
    ).data


def _produce_request(topic: str, records: bytes) -> Any:
    return build_request(
        0,
        9,
        {
            "transactional_id": None,
            "acks": -1,
            "timeout": _ms(5_000),
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}],
        },
    )


@pytest.mark.parametrize("version", [12, 13, 19])
async def test_fetch_sessions_over_the_wire(
    cluster: Any, admin: AIOKafkaAdminClient, version: int
) -> None:
    await create_topic(admin, "sessions")
    manager = cluster.brokers[0].replica_manager
    topic_id = manager.topic_id("sessions")
    connection = await _connect(cluster)
    try:
        await connection.send(_produce_request("sessions", _idempotent_batch(7)))
        full = await connection.send(_fetch_request(version, topic_id, session_id=0, epoch=0))
        assert full.error_code == ErrorCode.NONE and full.session_id != 0
        (data,) = full.responses[0].partitions
        assert (data.high_watermark, len(data.records) > 0) == (2, True)
        quiet = await connection.send(
            _fetch_request(version, topic_id, full.session_id, 1, offset=2)
        )
        assert (quiet.error_code, quiet.session_id, quiet.responses) == (
            ErrorCode.NONE,
            full.session_id,
            (),
        )
        stale = await connection.send(
            _fetch_request(version, topic_id, full.session_id, 1, partitions=[])
        )
        assert stale.error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH
        unknown = await connection.send(
            _fetch_request(version, topic_id, full.session_id + 1, 1, partitions=[])
        )
        assert unknown.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    finally:
        await connection.close()


async def test_a_settled_session_partition_that_changes_is_answered_by_the_parked_fetch(
    cluster: Any, admin: AIOKafkaAdminClient, wait_for: Any
) -> None:
    """A consumer session reads only changed partitions: a parked Fetch that read nothing
    answers with the records a settled partition of its session gets, long before the
    30 s wait is up, as Kafka, which reads the whole session, does."""
    await create_topic(admin, "settled")
    manager = cluster.brokers[0].replica_manager
    topic_id = manager.topic_id("settled")
    connection, producer = await _connect(cluster), await _connect(cluster)
    try:
        await producer.send(_produce_request("settled", _idempotent_batch(3)))
        full = await connection.send(
            _fetch_request(13, topic_id, session_id=0, epoch=0, topic="settled")
        )
        session_id = full.session_id
        caught_up = await connection.send(
            _fetch_request(13, topic_id, session_id, 1, offset=2, topic="settled")
        )
        assert caught_up.responses == ()
        parked = asyncio.create_task(
            connection.send(
                _fetch_request(
                    13, topic_id, session_id, 2, partitions=[], topic="settled", max_wait_ms=30_000
                )
            )
        )
        await wait_for(lambda: manager.parked_session_fetches(session_id) > 0, 10, "parked")
        await producer.send(_produce_request("settled", _idempotent_batch(4)))
        woken = await asyncio.wait_for(parked, 10)
        after = await connection.send(
            _fetch_request(13, topic_id, session_id, 3, partitions=[], topic="settled")
        )
    finally:
        await producer.close()
        await connection.close()
    assert (woken.error_code, after.error_code) == (ErrorCode.NONE, ErrorCode.NONE)
    (data,) = woken.responses[0].partitions
    assert (data.high_watermark, len(data.records) > 0) == (4, True)


def _fetch_request(
    version: int,
    topic_id: Any,
    session_id: int,
    epoch: int,
    *,
    partitions: list[int] | None = None,
    offset: int = 0,
    topic: str = "sessions",
    max_wait_ms: int = 0,
) -> Any:
    wanted = [0] if partitions is None else partitions
    request_topic = {
        "topic": topic,
        "topic_id": topic_id,
        "partitions": [
            {"partition": p, "fetch_offset": offset, "partition_max_bytes": 1 << 20} for p in wanted
        ],
    }
    return build_request(
        1,
        version,
        {
            "replica_id": -1,
            "max_wait": _ms(max_wait_ms),
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "isolation_level": 0,
            "session_id": session_id,
            "session_epoch": epoch,
            "topics": [request_topic] if wanted else [],
            "forgotten_topics_data": [],
            "rack_id": "",
        },
    )
