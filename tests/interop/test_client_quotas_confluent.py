"""A real producer (confluent-kafka / librdkafka) over its ``producer_byte_rate``: it is
told the throttle time (its ``throttle_cb`` fires), it is slowed down to about its quota
while a client id without a quota on the same broker is not, and every record is still
delivered.

The broker keeps 3 quota windows instead of Kafka's default 11 so that the burst a rate
over padded windows allows at first (two windows' worth here) is small and the test short.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from confluent_kafka import Producer

from mirrorsim.client import Admin, NewTopic, QuotaAlteration, quota_entity

pytestmark = pytest.mark.interop
RATE = 50_000
CHUNKS = 15
CHUNK_RECORDS = 20
RECORD_BYTES = 1_000
RECORDS = CHUNKS * CHUNK_RECORDS
TIMEOUT_S = 60.0


def _produce(bootstrap: str, client_id: str) -> tuple[float, list[float], list[Any]]:
    """(seconds to deliver every record, throttle times reported in seconds, delivery errors)."""
    throttles: list[float] = []
    errors: list[Any] = []
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": client_id,
            "linger.ms": 5,
            "throttle_cb": lambda event: throttles.append(event.throttle_time),
        }
    )

    def delivered(error: Any, _message: Any) -> None:
        if error is not None:
            errors.append(error)

    started = time.monotonic()
    for _ in range(CHUNKS):  # one produce request per chunk
        for _ in range(CHUNK_RECORDS):
            producer.produce("throttled", b"v" * RECORD_BYTES, on_delivery=delivered)
        assert producer.flush(TIMEOUT_S) == 0
    elapsed = time.monotonic() - started
    producer.poll(0)
    return elapsed, throttles, errors


async def test_a_producer_over_its_quota_is_throttled_and_slowed(start_cluster: Any) -> None:
    cluster = await start_cluster(configs={"quota.window.num": 3})
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        (await admin.create_topics([NewTopic("throttled", 1, 1)])).all()
        quota = QuotaAlteration(quota_entity(client_id="slow"), {"producer_byte_rate": RATE})
        (await admin.alter_client_quotas([quota])).all()

    fast, fast_throttles, fast_errors = await asyncio.to_thread(_produce, cluster.bootstrap, "fast")
    slow, slow_throttles, slow_errors = await asyncio.to_thread(_produce, cluster.bootstrap, "slow")
    assert fast_errors == [] and slow_errors == []
    assert fast_throttles == []
    assert slow_throttles and max(slow_throttles) > 0
    # beyond the first two windows' burst, the rest goes at about the quota
    expected = (RECORDS * RECORD_BYTES - 2 * RATE) / RATE
    assert slow >= 0.7 * expected
    assert slow > fast + 1.0
    end = cluster.brokers[0].replica_manager.partition("throttled", 0).log.log_end_offset
    assert end == 2 * RECORDS
