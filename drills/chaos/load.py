"""Writes of a chaos schedule through the project's own client: one Produce request, one
attempt, acks=all.

A single attempt makes an acknowledgement unambiguous: the batch is in the log at the
returned base offset or the request failed, and the explorer never guesses which of
several retries landed. It is also much cheaper than starting a client library's
producer for every write, which matters at a thousand schedules.
"""

from __future__ import annotations

import datetime
import time
from dataclasses import dataclass

from mirrorsim.client.cluster import ClusterClient, RequestSpec
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.records import Record, build_batch

PRODUCE_API = 0
PRODUCE_VERSION = 9
CLIENT_CONFIG = {"request.timeout.ms": "3000", "default.api.timeout.ms": "3000"}


@dataclass(frozen=True, slots=True)
class ProduceOutcome:
    """``offset`` of the batch's first record when acknowledged, else the refusal."""

    offset: int | None
    error: str | None = None


def produce_request(topic: str, partition: int, values: list[str]) -> RequestSpec:
    now_ms = int(time.time() * 1000)
    records = [Record(i, now_ms, None, value.encode()) for i, value in enumerate(values)]
    batch = build_batch(records).data
    return RequestSpec(
        PRODUCE_API,
        {
            "transactional_id": None,
            "acks": -1,
            "timeout": datetime.timedelta(seconds=3),
            "topic_data": [
                {"name": topic, "partition_data": [{"index": partition, "records": batch}]}
            ],
        },
        versions=(PRODUCE_VERSION,),
    )


async def produce_once(
    client: ClusterClient, topic: str, partition: int, values: list[str]
) -> ProduceOutcome:
    """Send ``values`` as one batch to the partition's leader, once."""
    try:
        await client.refresh_metadata([topic])
        leader = client.leader_for(topic, partition)
        if leader is None:
            return ProduceOutcome(None, "no leader")
        response = await client.send_to_node_once(leader, produce_request(topic, partition, values))
    except (KafkaError, OSError, TimeoutError) as exc:
        return ProduceOutcome(None, type(exc).__name__)
    result = response.responses[0].partition_responses[0]
    if result.error_code != ErrorCode.NONE:
        return ProduceOutcome(None, ErrorCode(result.error_code).name)
    return ProduceOutcome(int(result.base_offset))
