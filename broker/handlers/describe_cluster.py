"""DescribeCluster: the cluster id, the live brokers and the (nominal) controller, and on
request the caller's authorized operations on the cluster."""

from __future__ import annotations

from typing import Any

from mirrorsim.broker.auth.enforcement import authorized_operations
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.response import NO_THROTTLE, error_fields, respond
from mirrorsim.broker.network.advertised import advertised_brokers
from mirrorsim.protocol.acl import CLUSTER_RESOURCE_NAME, ResourceType
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.messages.constants import UNSET_AUTHORIZED_OPERATIONS

DESCRIBE_CLUSTER_KEY = 60
BROKERS_ENDPOINT = 1


@handles(DESCRIBE_CLUSTER_KEY, min_version=0, max_version=2)
async def handle(ctx: RequestContext, body: Any) -> Any:
    broker = ctx.broker
    endpoint_type = getattr(body, "endpoint_type", BROKERS_ENDPOINT)
    error = None
    if endpoint_type != BROKERS_ENDPOINT:
        error = KafkaError(
            ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
            f"Endpoint type {endpoint_type} is not supported by a broker",
        )
    return respond(
        body,
        {
            "throttle_time": NO_THROTTLE,
            **error_fields(error),
            "endpoint_type": endpoint_type,
            "cluster_id": broker.cluster_id,
            "controller_id": broker.controller_id(),
            "brokers": [
                {
                    "broker_id": b.broker_id,
                    "host": host,
                    "port": port,
                    "rack": b.rack,
                    "is_fenced": False,
                }
                for b, host, port in await advertised_brokers(ctx, broker.live_brokers())
            ],
            "cluster_authorized_operations": (
                await authorized_operations(ctx, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME)
                if body.include_cluster_authorized_operations
                else UNSET_AUTHORIZED_OPERATIONS
            ),
        },
    )
