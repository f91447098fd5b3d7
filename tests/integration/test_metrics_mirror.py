"""Mirror metrics read from live mirroring between two in-process clusters, over HTTP.

A deterministic, non-zero lag: the source holds an open transaction, so the mirror
(which fetches read_committed) stops at the source's LSO while the source's high watermark
is past it; pausing the partition then freezes both offsets.
"""

from __future__ import annotations

from typing import Any

from aiokafka import AIOKafkaProducer
from helpers.metrics import scrape
from helpers.mirrors import (
    MIRROR,
    MIRROR_CONFIGS,
    batches_of,
    broker_of,
    mirror_state,
    mirrored_up_to,
    produce,
)

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.protocol.errors import ErrorCode, KafkaError

COMMITTED = 3
PENDING = 4
MANAGER = (("client_id", "MirrorReplica"),)


async def describe_lag(destination: Any, topic: str, partition: int) -> int | None:
    async with Admin(bootstrap=destination.bootstrap) as admin:
        described = await admin.describe_mirrors([MIRROR])
    for p in described[MIRROR].partitions:
        if (p.topic, p.partition) == (topic, partition):
            return p.lag
    return None


def consumer_lags(samples: dict[Any, float], topic: str) -> dict[tuple[str, int], float]:
    """ConsumerLag series of ``topic``: (client id, partition) → lag."""
    return {
        (dict(labels)["client_id"], int(dict(labels)["partition"])): value
        for (name, labels), value in samples.items()
        if name == "kafka_server_fetcher_lag_consumer_lag" and dict(labels)["topic"] == topic
    }


def total(samples: dict[Any, float], name: str) -> float:
    return sum(value for (sample, _), value in samples.items() if sample == name)


async def start_mirror(start_cluster: Any, topics: list[str]) -> tuple[Any, Any]:
    source = await start_cluster("primary", configs=MIRROR_CONFIGS)
    destination = await start_cluster("backup", configs=MIRROR_CONFIGS)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic(t, 1, 1) for t in topics])).all()
    return source, destination


async def add_to_mirror(source: Any, destination: Any, topics: list[str]) -> None:
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, topics)).all()


async def test_lag_states_and_bytes_follow_live_mirroring(
    start_cluster: Any, wait_for: Any
) -> None:
    source, destination = await start_mirror(start_cluster, ["orders", "payments"])
    await produce(source.bootstrap, "orders", COMMITTED)
    await produce(source.bootstrap, "payments", 5)
    txn = AIOKafkaProducer(bootstrap_servers=source.bootstrap, transactional_id="metrics-lag")
    await txn.start()
    try:
        await txn.begin_transaction()
        for i in range(PENDING):
            await txn.send_and_wait("orders", f"pending-{i}".encode(), partition=0)
        await add_to_mirror(source, destination, ["orders", "payments"])

        async def pending_lag() -> bool:
            return await describe_lag(destination, "orders", 0) == PENDING

        await wait_for(
            pending_lag, timeout=20, message="the mirror to stop at the source LSO, behind its HW"
        )
        async with Admin(bootstrap=destination.bootstrap) as admin:
            (await admin.pause_mirror_topics(MIRROR, ["orders"])).all()
        await wait_for(lambda: mirror_state(destination, "orders", 0) == "PAUSED", timeout=20)
        await wait_for(lambda: mirrored_up_to(source, destination, "payments", 0), timeout=20)
        port = broker_of(destination).metrics.port

        samples = await scrape(port)
        described = await describe_lag(destination, "orders", 0)
        [(client_id, _)] = consumer_lags(samples, "orders")
        assert consumer_lags(samples, "orders") == {(client_id, 0): described}
        assert described == PENDING
        assert client_id.startswith("MirrorFetcherThread-") and client_id.endswith(f"-{MIRROR}")
        assert samples[("kafka_server_mirror_max_lag", MANAGER)] == PENDING
        assert samples[("kafka_server_mirror_paused_partition_state", ())] == 1
        assert samples[("kafka_server_mirror_mirroring_partition_state", ())] == 1
        assert samples[("kafka_server_mirror_failed_partitions", MANAGER)] == 0
        assert samples[("kafka_server_mirror_dead_threads", MANAGER)] == 0
        assert samples[("kafka_server_mirror_min_fetch_rate", MANAGER)] > 0

        copied_up_to = batches_of(destination, "payments", 0)[-1].last_offset
        await produce(source.bootstrap, "payments", 7, tag="more")
        await wait_for(lambda: mirrored_up_to(source, destination, "payments", 0), timeout=20)
        after = await scrape(port)
        appended = sum(
            b.size for b in batches_of(destination, "payments", 0) if b.base_offset > copied_up_to
        )
        for name in (
            "kafka_server_fetcher_stats_bytes_total",
            "kafka_server_mirror_replication_bytes_total",
        ):
            assert total(after, name) - total(samples, name) == appended
        requests = "kafka_server_fetcher_stats_requests_total"
        assert total(after, requests) > total(samples, requests)
        assert consumer_lags(after, "orders") == {(client_id, 0): PENDING}
        assert await describe_lag(destination, "orders", 0) == PENDING
    finally:
        await txn.stop()


async def test_a_fetcher_that_dies_is_counted(
    start_cluster: Any, wait_for: Any, monkeypatch: Any
) -> None:
    source, destination = await start_mirror(start_cluster, ["orders"])
    await produce(source.bootstrap, "orders", 2)
    coordinator = broker_of(destination).mirrors

    def broken_append(*_: Any) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(coordinator, "append", broken_append)
    await add_to_mirror(source, destination, ["orders"])

    async def dead_threads() -> float:
        samples = await scrape(broker_of(destination).metrics.port)
        return samples[("kafka_server_mirror_dead_threads", MANAGER)]

    assert await wait_for(dead_threads, timeout=20, message="a dead fetcher") == 1


async def test_a_failed_partition_is_counted(
    start_cluster: Any, wait_for: Any, monkeypatch: Any
) -> None:
    source, destination = await start_mirror(start_cluster, ["orders"])
    await produce(source.bootstrap, "orders", 2)
    replica_manager = broker_of(destination).replica_manager

    def refused_append(*_: Any) -> None:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, "refused")

    monkeypatch.setattr(replica_manager, "append_mirror_batches", refused_append)
    await add_to_mirror(source, destination, ["orders"])
    await wait_for(lambda: mirror_state(destination, "orders", 0) == "FAILED", timeout=20)
    samples = await scrape(broker_of(destination).metrics.port)
    assert samples[("kafka_server_mirror_failed_partitions", MANAGER)] == 1
    assert samples[("kafka_server_mirror_failed_partition_state", ())] == 1
    assert samples[("kafka_server_mirror_mirroring_partition_state", ())] == 0
