"""Kafka's RequestMetrics timers per request type, scraped over HTTP: a Fetch long poll
that finds nothing spends its wait parked (RemoteTime), not handling (LocalTime); every
timer counts every request, mirror RPCs included; the scrape passes promtool."""

from __future__ import annotations

import datetime
from typing import Any

from helpers.metrics import scrape
from helpers.promtool import promtool_problems

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.client.cluster import RequestSpec

PREFIX = "kafka_network_request_metrics"
TIMERS = (
    "request_queue",
    "local",
    "remote",
    "response_queue",
    "response_send",
    "throttle",
    "total",
)
LONG_POLL_S = 0.4
POLLS = 2


def long_poll(topic: str) -> RequestSpec:
    partition = {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1024}
    return RequestSpec(
        1,
        {
            "max_wait": datetime.timedelta(seconds=LONG_POLL_S),
            "min_bytes": 1,
            "topics": [{"topic": topic, "partitions": [partition]}],
            "forgotten_topics_data": [],
        },
        versions=(12,),
    )


def timer(samples: dict[Any, float], name: str, request: str, part: str) -> float:
    return samples[(f"{PREFIX}_{name}_time_seconds_{part}", (("request", request),))]


async def test_a_long_poll_is_remote_time_and_every_timer_counts_every_request(
    start_cluster: Any, wait_for: Any
) -> None:
    cluster = await start_cluster()
    (broker,) = cluster.brokers
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        (await admin.create_topics([NewTopic("empty", 1, 1)])).all()
        for _ in range(POLLS):
            response = await admin.cluster.send_to_any(long_poll("empty"))
            assert response.responses[0].partitions[0].error_code == 0
        await admin.list_mirrors()

    async def all_sent() -> dict[Any, float] | None:
        samples = await scrape(broker.metrics.port)
        fetches = (f"{PREFIX}_total_time_seconds_count", (("request", "Fetch"),))
        return samples if samples.get(fetches) == POLLS else None

    samples = await wait_for(all_sent, timeout=10, message="both long polls accounted")
    for name in TIMERS:
        assert timer(samples, name, "Fetch", "count") == POLLS, name
        assert timer(samples, name, "ListMirrors", "count") == 1, name
    remote = timer(samples, "remote", "Fetch", "sum")
    assert remote >= POLLS * LONG_POLL_S * 0.9
    assert timer(samples, "local", "Fetch", "sum") < remote
    assert timer(samples, "total", "Fetch", "sum") >= remote
    assert timer(samples, "remote", "ListMirrors", "sum") == 0
    assert timer(samples, "throttle", "Fetch", "sum") == 0
    assert await promtool_problems(broker.metrics.port) == ""
