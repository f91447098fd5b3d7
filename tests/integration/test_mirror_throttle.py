"""Destination-side mirror throttling, set with the spec's kafka-configs commands."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from click.testing import CliRunner, Result
from helpers.metrics import scrape
from helpers.mirrors import (
    MIRROR,
    MIRROR_CONFIGS,
    broker_of,
    mirror_state,
    mirrored_up_to,
)

from mirrorsim.cli.main import cli
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.fetcher.manager import fetcher_client_id

RATE = 400_000
VALUE = b"v" * 2000
RECORDS = 800
BYTE_RATE = ("kafka_server_mirror_replication_byte_rate", ())


async def invoke(*args: str) -> Result:
    return await asyncio.to_thread(CliRunner().invoke, cli, list(args))


async def produce_bytes(bootstrap: str, topic: str) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks=-1, linger_ms=5)
    await producer.start()
    try:
        futures = [await producer.send(topic, VALUE, partition=0) for _ in range(RECORDS)]
        await asyncio.gather(*futures)
    finally:
        await producer.stop()


async def time_to_mirror(source: Any, destination: Any, wait_for: Any) -> tuple[float, float]:
    """(seconds from the first send until mirrored, of which after the last send)."""
    started = time.monotonic()
    await produce_bytes(source.bootstrap, "my-topic")
    produced = time.monotonic()
    await wait_for(lambda: mirrored_up_to(source, destination, "my-topic", 0), timeout=60)
    return time.monotonic() - started, time.monotonic() - produced


async def test_the_spec_throttling_commands_hold_a_mirror_to_the_rate_until_removed(
    start_cluster: Any, wait_for: Any
) -> None:
    source = await start_cluster("primary", configs=MIRROR_CONFIGS)
    destination = await start_cluster("backup", configs=MIRROR_CONFIGS)
    broker_id = broker_of(destination).broker_id
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic("my-topic", 1, 1)])).all()
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, ["my-topic"])).all()
    await wait_for(lambda: mirror_state(destination, "my-topic", 0) == "MIRRORING", timeout=20)

    rate = await invoke(
        "configs",
        "--bootstrap-server",
        destination.bootstrap,
        "--entity-type",
        "brokers",
        "--entity-name",
        str(broker_id),
        "--alter",
        "--add-config",
        f"mirror.replication.throttled.rate={RATE}",
    )
    assert (rate.exit_code, rate.output) == (
        0,
        f"Completed updating config for broker {broker_id}.\n",
    )
    replicas = await invoke(
        "configs",
        "--bootstrap-server",
        destination.bootstrap,
        "--entity-type",
        "topics",
        "--entity-name",
        "my-topic",
        "--alter",
        "--add-config",
        f"mirror.replication.throttled.replicas=[0:{broker_id}]",
    )
    assert (replicas.exit_code, replicas.output) == (
        0,
        "Completed updating config for topic my-topic.\n",
    )
    quota = broker_of(destination).mirrors.fetchers.quota
    await wait_for(lambda: quota.is_throttled("my-topic", 0), timeout=10)

    throttled, throttled_tail = await time_to_mirror(source, destination, wait_for)
    payload = RECORDS * len(VALUE)
    assert throttled >= (payload - RATE) / RATE * 0.9
    samples = await scrape(broker_of(destination).metrics.port)
    assert 0 < samples[BYTE_RATE] <= RATE * 1.5

    removed = await invoke(
        "configs",
        "--bootstrap-server",
        destination.bootstrap,
        "--entity-type",
        "brokers",
        "--entity-name",
        str(broker_id),
        "--alter",
        "--delete-config",
        "mirror.replication.throttled.rate",
    )
    assert removed.exit_code == 0, removed.output
    await wait_for(lambda: not quota.exceeded(), timeout=10)
    _, tail = await time_to_mirror(source, destination, wait_for)
    assert tail < throttled_tail / 2


async def test_a_cluster_default_rate_applies_and_a_bad_replica_list_is_refused(
    start_cluster: Any, wait_for: Any
) -> None:
    destination = await start_cluster("backup", configs=MIRROR_CONFIGS)
    broker = broker_of(destination)
    async with Admin(bootstrap=destination.bootstrap) as admin:
        (await admin.create_topics([NewTopic("my-topic", 1, 1)])).all()
    default = await invoke(
        "configs",
        "--bootstrap-server",
        destination.bootstrap,
        "--entity-type",
        "brokers",
        "--entity-name",
        "",
        "--alter",
        "--add-config",
        "mirror.replication.throttled.rate=1000000",
    )
    assert default.exit_code == 0, default.output
    await wait_for(lambda: broker.config("mirror.replication.throttled.rate") == 1_000_000)
    bad = await invoke(
        "configs",
        "--bootstrap-server",
        destination.bootstrap,
        "--entity-type",
        "topics",
        "--entity-name",
        "my-topic",
        "--alter",
        "--add-config",
        "mirror.replication.throttled.replicas=[0]",
    )
    assert bad.exit_code == 1
    assert "[partitionId]:[brokerId]" in bad.output
    assert len(bad.output.strip().splitlines()) == 1


SOURCE_RATE = 100_000
QUOTA_WINDOWS = 2


@pytest.mark.slow
async def test_the_spec_source_side_quota_holds_the_mirror_fetcher_until_removed(
    start_cluster: Any, wait_for: Any
) -> None:
    """The spec's source-side example: ``consumer_byte_rate`` for the client id of the
    destination's mirror fetcher, set on the *source* with kafka-configs. The source
    answers the fetcher's Fetch requests with a throttle time and mutes it, so the mirror
    copies at about the quota (after Kafka's burst of one set of sample windows) until
    the quota is deleted."""
    quota_configs = {
        **MIRROR_CONFIGS,
        "quota.window.num": QUOTA_WINDOWS,
        "quota.window.size.seconds": 1,
    }
    source = await start_cluster("primary", configs=quota_configs)
    destination = await start_cluster("backup", configs=MIRROR_CONFIGS)
    fetcher = fetcher_client_id(broker_of(destination).broker_id, 0, MIRROR)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic("my-topic", 1, 1)])).all()
    client_quota = [
        "configs",
        "--bootstrap-server",
        source.bootstrap,
        "--entity-type",
        "clients",
        "--entity-name",
        fetcher,
        "--alter",
    ]
    limited = await invoke(*client_quota, "--add-config", f"consumer_byte_rate={SOURCE_RATE}")
    assert (limited.exit_code, limited.output) == (
        0,
        f"Completed updating config for client {fetcher}.\n",
    )
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, ["my-topic"])).all()
    await wait_for(lambda: mirror_state(destination, "my-topic", 0) == "MIRRORING", timeout=20)

    throttled, throttled_tail = await time_to_mirror(source, destination, wait_for)
    burst = SOURCE_RATE * QUOTA_WINDOWS
    assert throttled >= (RECORDS * len(VALUE) - burst) / SOURCE_RATE * 0.8

    released = await invoke(*client_quota, "--delete-config", "consumer_byte_rate")
    assert released.exit_code == 0, released.output
    _, tail = await time_to_mirror(source, destination, wait_for)
    assert tail < throttled_tail / 2
