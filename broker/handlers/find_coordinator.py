"""FindCoordinator for GROUP and TRANSACTION keys.

The key is mapped onto a live broker as described in ``mirrorsim.broker.group.ownership``;
with one broker it is always itself. As in Kafka, each key needs DESCRIBE on its group
(GROUP_AUTHORIZATION_FAILED) or transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any

from mirrorsim.broker.auth.enforcement import denial
from mirrorsim.broker.group.ownership import coordinator_id
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.response import NO_THROTTLE, error_fields, respond
from mirrorsim.broker.network.advertised import readvertised
from mirrorsim.protocol.acl import AclOperation, ResourceType
from mirrorsim.protocol.errors import ErrorCode, KafkaError

FIND_COORDINATOR_KEY = 10
GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
_ACL_RESOURCE = {
    GROUP_KEY_TYPE: ResourceType.GROUP,
    TRANSACTION_KEY_TYPE: ResourceType.TRANSACTIONAL_ID,
}
_PARTITION_COUNT_CONFIG = {
    GROUP_KEY_TYPE: "offsets.topic.num.partitions",
    TRANSACTION_KEY_TYPE: "transaction.state.log.num.partitions",
}


@handles(FIND_COORDINATOR_KEY, min_version=0, max_version=6)
async def handle(ctx: RequestContext, body: Any) -> Any:
    key_type = getattr(body, "key_type", GROUP_KEY_TYPE)
    if int(body.__version__) >= 4:
        coordinators = [await _coordinator(ctx, key, key_type) for key in body.coordinator_keys]
        return respond(body, {"throttle_time": NO_THROTTLE, "coordinators": coordinators})
    coordinator = await _coordinator(ctx, body.key, key_type)
    return respond(body, {"throttle_time": NO_THROTTLE, **coordinator})


async def _coordinator(ctx: RequestContext, key: str, key_type: int) -> dict[str, Any]:
    resource_type = _ACL_RESOURCE.get(key_type)
    if resource_type is not None:
        denied = await denial(ctx, AclOperation.DESCRIBE, resource_type, key)
        if denied is not None:
            return _failed(key, denied)
    return await readvertised(ctx, _lookup(ctx.broker, key, key_type))


def _lookup(broker: Any, key: str, key_type: int) -> dict[str, Any]:
    config_name = _PARTITION_COUNT_CONFIG.get(key_type)
    live = broker.live_brokers()
    if config_name is None:
        error = KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown coordinator key type {key_type}")
    elif not live:
        error = KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    else:
        node_id = coordinator_id(key, int(broker.config(config_name)), [b.broker_id for b in live])
        node = next(b for b in live if b.broker_id == node_id)
        return {
            "key": key,
            "node_id": node.broker_id,
            "host": node.host,
            "port": node.port,
            **error_fields(None),
        }
    return _failed(key, error)


def _failed(key: str, error: KafkaError) -> dict[str, Any]:
    return {"key": key, "node_id": -1, "host": "", "port": -1, **error_fields(error)}
