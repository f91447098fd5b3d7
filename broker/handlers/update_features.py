"""UpdateFeatures (api key 57, v0..v1): change finalized feature levels on the controller.

Kafka serves it at the controller: here, the holder of the controller lease; any other
broker answers NOT_CONTROLLER so the client re-routes after a metadata refresh. The
principal needs ALTER on the cluster. The rules (``mirrorsim.broker.metadata.features``)
are checked against the stored levels inside the write transaction, so the request is
applied whole or refused whole, as Kafka 4's controller does: a refusal is the
top-level error and every feature's result. ``validate_only`` checks without writing.
v0 carries ``allow_downgrade`` where v1 carries ``upgrade_type``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mirrorsim.broker.auth.enforcement import authorize
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.broker_port import HandlerBroker
from mirrorsim.broker.handlers.response import NO_THROTTLE, error_fields, respond
from mirrorsim.broker.metadata.features import FeatureUpdate, apply_updates
from mirrorsim.protocol.acl import AclOperation, ResourceType
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.features import UpgradeType

UPDATE_FEATURES_KEY = 57


@handles(UPDATE_FEATURES_KEY, min_version=0, max_version=1)
async def handle(ctx: RequestContext, body: Any) -> Any:
    updates = [_feature_update(u) for u in body.feature_updates]
    try:
        await authorize(ctx, AclOperation.ALTER, ResourceType.CLUSTER)
        if not ctx.broker.cluster_controller.is_active():
            raise KafkaError(ErrorCode.NOT_CONTROLLER)
        await _update_features(ctx.broker, updates, getattr(body, "validate_only", False))
    except KafkaError as exc:
        return _response(body, updates, exc)
    return _response(body, updates, None)


def _feature_update(key: Any) -> FeatureUpdate:
    if hasattr(key, "upgrade_type"):
        upgrade_type = UpgradeType.from_wire(int(key.upgrade_type))
    else:
        upgrade_type = UpgradeType.from_allow_downgrade(bool(key.allow_downgrade))
    return FeatureUpdate(key.feature, int(key.max_version_level), upgrade_type)


async def _update_features(
    broker: HandlerBroker, updates: list[FeatureUpdate], validate_only: bool
) -> None:
    controller_id = broker.broker_id
    if validate_only:
        current = await asyncio.to_thread(broker.store.finalized_features)
        apply_updates(current, updates, controller_id)
        return
    await asyncio.to_thread(
        broker.store.alter_feature_levels,
        lambda current: apply_updates(current, updates, controller_id),
    )
    await broker.refresh_metadata()


def _response(body: Any, updates: list[FeatureUpdate], error: KafkaError | None) -> Any:
    fields = error_fields(error)
    return respond(
        body,
        {
            "throttle_time": NO_THROTTLE,
            **fields,
            "results": [
                {"feature": name, **fields} for name in dict.fromkeys(u.feature for u in updates)
            ],
        },
    )
