"""The mirror fetchers' client network metrics (the spec's
``mirror-broker-{id}-fetcher-{n}-mirror-{name}-metrics``), scraped while a real mirror runs:
one open connection per fetcher, requests and responses counted, and the bytes received
grow by at least what the source was given."""

from __future__ import annotations

import os
from typing import Any

from aiokafka import AIOKafkaProducer
from helpers.metrics import scrape
from helpers.mirrors import MIRROR, MIRROR_CONFIGS, mirrored_up_to, produce
from helpers.promtool import promtool_problems

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic

TOPIC = "orders"
PREFIX = "kafka_server_mirror_fetcher_network"
VALUE_BYTES = 10_000
RECORDS = 20


async def produce_large(bootstrap: str) -> None:
    """Incompressible values, so the fetched bytes are at least their sum."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks=-1)
    await producer.start()
    try:
        for _ in range(RECORDS):
            await producer.send_and_wait(TOPIC, os.urandom(VALUE_BYTES), partition=0)
    finally:
        await producer.stop()


def fetcher_samples(samples: dict[Any, float], metric: str) -> dict[tuple[Any, ...], float]:
    return {labels: v for (name, labels), v in samples.items() if name == f"{PREFIX}_{metric}"}


async def test_fetcher_network_metrics_follow_the_mirror(start_cluster: Any, wait_for: Any) -> None:
    source = await start_cluster("primary", configs=MIRROR_CONFIGS)
    destination = await start_cluster("backup", configs=MIRROR_CONFIGS)
    (broker,) = destination.brokers
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic(TOPIC, 1, 1)])).all()
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, [TOPIC])).all()
    await produce(source.bootstrap, TOPIC, 1)
    await wait_for(lambda: mirrored_up_to(source, destination, TOPIC, 0), timeout=30)

    before = await scrape(broker.metrics.port)
    (labels,) = fetcher_samples(before, "connections")
    found = dict(labels)
    assert found["client_id"].startswith(f"broker-{broker.broker_id}-fetcher-")
    assert found["client_id"].endswith(f"-mirror-{MIRROR}")
    assert found["broker_id"] == str(source.brokers[0].broker_id)
    assert fetcher_samples(before, "connections")[labels] == 1
    assert fetcher_samples(before, "connection_creations_total")[labels] >= 1
    requests = fetcher_samples(before, "requests_total")[labels]
    assert requests >= fetcher_samples(before, "responses_total")[labels] >= 1
    received = fetcher_samples(before, "incoming_bytes_total")[labels]
    assert fetcher_samples(before, "outgoing_bytes_total")[labels] > 0

    await produce_large(source.bootstrap)
    await wait_for(lambda: mirrored_up_to(source, destination, TOPIC, 0), timeout=30)
    after = await scrape(broker.metrics.port)
    assert fetcher_samples(after, "incoming_bytes_total")[labels] >= received + (
        RECORDS * VALUE_BYTES
    )
    assert fetcher_samples(after, "requests_total")[labels] > requests
    assert await promtool_problems(broker.metrics.port) == ""
