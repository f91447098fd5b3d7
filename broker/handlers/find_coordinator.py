"""FindCoordinator for GROUP, TRANSACTION and MIRROR keys.

A GROUP or TRANSACTION key is mapped onto a live broker as described in
``mirrorsim.broker.group.ownership``; with one broker it is always itself. As in Kafka,
each key needs DESCRIBE on its group (GROUP_AUTHORIZATION_FAILED) or transactional id
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED).

A MIRROR key (KIP-1279's coordinator type 3) is a mirror name; its coordinator is the
broker leading the mirror's ``__mirror_state`` partition, asked of the mirror coordinator
through ``MirrorLifecyclePort.mirror_coordinator``. Finding it is an inter-broker call in
the spec's permission table, so it needs CLUSTER_ACTION on the cluster
(CLUSTER_AUTHORIZATION_FAILED per key); a mirror whose partition has no leader answers
COORDINATOR_NOT_AVAILABLE, which clients retry.
"""

from __future__ import annotations

from typing import Any

from mirrorsim.broker.auth.enforcement import denial
from mirrorsim.broker.group.ownership import coordinator_id
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.broker_port import HandlerBroker
from mirrorsim.broker.handlers.mirror_ports import MirrorLifecyclePort
from mirrorsim.broker.handlers.response import NO_THROTTLE, error_fields, respond
from mirrorsim.broker.network.advertised import readvertised
from mirrorsim.protocol.acl import CLUSTER_RESOURCE_NAME, AclOperation, ResourceType
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.messages.constants import COORDINATOR_TYPE_MIRROR

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
    coordinator.pop("key")  # versions before 4 answer one key, the one asked: not repeated
    return respond(body, {"throttle_time": NO_THROTTLE, **coordinator})


async def _coordinator(ctx: RequestContext, key: str, key_type: int) -> dict[str, Any]:
    if key_type == COORDINATOR_TYPE_MIRROR:
        return await _mirror_coordinator(ctx, key)
    resource_type = _ACL_RESOURCE.get(key_type)
    if resource_type is not None:
        denied = await denial(ctx, AclOperation.DESCRIBE, resource_type, key)
        if denied is not None:
            return _failed(key, denied)
    return await readvertised(ctx, _lookup(ctx.broker, key, key_type))


async def _mirror_coordinator(ctx: RequestContext, mirror: str) -> dict[str, Any]:
    denied = await denial(
        ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME
    )
    if denied is not None:
        return _failed(mirror, denied)
    lifecycle: MirrorLifecyclePort = ctx.broker.mirror_lifecycle
    node_id = lifecycle.mirror_coordinator(mirror)
    node = next((b for b in ctx.broker.live_brokers() if b.broker_id == node_id), None)
    if node is None:
        return _failed(mirror, KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE))
    return await readvertised(ctx, _found(mirror, node))


def _found(key: str, node: Any) -> dict[str, Any]:
    return {
        "key": key,
        "node_id": node.broker_id,
        "host": node.host,
        "port": node.port,
        **error_fields(None),
    }


def _lookup(broker: HandlerBroker, key: str, key_type: int) -> dict[str, Any]:
    config_name = _PARTITION_COUNT_CONFIG.get(key_type)
    live = broker.live_brokers()
    if config_name is None:
        error = KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown coordinator key type {key_type}")
    elif not live:
        error = KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    else:
        node_id = coordinator_id(key, int(broker.config(config_name)), [b.broker_id for b in live])
        return _found(key, next(b for b in live if b.broker_id == node_id))
    return _failed(key, error)


def _failed(key: str, error: KafkaError) -> dict[str, Any]:
    return {"key": key, "node_id": -1, "host": "", "port": -1, **error_fields(error)}
