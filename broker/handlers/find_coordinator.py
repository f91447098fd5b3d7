"""FindCoordinator for GROUP and TRANSACTION keys.

Kafka maps a key to a partition of ``__consumer_offsets`` (or ``__transaction_state``)
with ``toPositive(key.hashCode()) % partitions`` and answers that partition's leader.
Groups here keep their offsets in the metadata store, so there is no such topic: the
partition number is mapped onto the live brokers in id order instead. Every broker sees
the same live set, so every broker names the same coordinator; with one broker it is
always itself.
"""

from __future__ import annotations

from typing import Any

from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.response import NO_THROTTLE, error_fields, respond
from mirrorsim.protocol.errors import ErrorCode, KafkaError

FIND_COORDINATOR_KEY = 10
GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
_PARTITION_COUNT_CONFIG = {
    GROUP_KEY_TYPE: "offsets.topic.num.partitions",
    TRANSACTION_KEY_TYPE: "transaction.state.log.num.partitions",
}


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def coordinator_partition(key: str, partition_count: int) -> int:
    return (java_string_hash(key) & 0x7FFFFFFF) % partition_count


@handles(FIND_COORDINATOR_KEY, min_version=0, max_version=6)
async def handle(ctx: RequestContext, body: Any) -> Any:
    key_type = getattr(body, "key_type", GROUP_KEY_TYPE)
    if int(body.__version__) >= 4:
        coordinators = [_lookup(ctx.broker, key, key_type) for key in body.coordinator_keys]
        return respond(body, {"throttle_time": NO_THROTTLE, "coordinators": coordinators})
    return respond(body, {"throttle_time": NO_THROTTLE, **_lookup(ctx.broker, body.key, key_type)})


def _lookup(broker: Any, key: str, key_type: int) -> dict[str, Any]:
    config_name = _PARTITION_COUNT_CONFIG.get(key_type)
    live = broker.live_brokers()
    if config_name is None:
        error = KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown coordinator key type {key_type}")
    elif not live:
        error = KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    else:
        partition = coordinator_partition(key, int(broker.config(config_name)))
        node = live[partition % len(live)]
        return {
            "key": key,
            "node_id": node.broker_id,
            "host": node.host,
            "port": node.port,
            **error_fields(None),
        }
    return {"key": key, "node_id": -1, "host": "", "port": -1, **error_fields(error)}
