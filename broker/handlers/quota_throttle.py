"""The request paths' use of client quotas: record, answer the throttle time and have the
connection muted for it (KIP-219). Produce and Fetch record bytes; every request records
its event-loop time against ``request_percentage``."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

from mirrorsim.broker.handlers.base import RequestContext
from mirrorsim.broker.quotas.entity import REQUEST_PERCENTAGE
from mirrorsim.broker.quotas.manager import SECONDS_TO_PERCENTAGE, Client
from mirrorsim.protocol.messages.constants import MirrorApiKey
from mirrorsim.protocol.messages.encoded_response import EncodedResponse

EXEMPT_API_KEYS = frozenset(
    {
        17,  # SaslHandshake
        18,  # ApiVersions
        36,  # SaslAuthenticate
        27,  # WriteTxnMarkers (a cluster action between brokers)
        MirrorApiKey.READ_MIRROR_STATES,
        MirrorApiKey.WRITE_MIRROR_STATES,
        MirrorApiKey.BUMP_LEADER_EPOCHS,
    }
)
"""Requests never throttled on ``request_percentage``: those a client needs to connect and
the brokers' own cluster actions (Kafka's ``sendResponseExemptThrottle``)."""


def client_of(ctx: RequestContext) -> Client:
    return Client.of(ctx.principal, ctx.header.client_id)


def record_and_throttle(ctx: RequestContext, key: str, value: float) -> int:
    """Record ``value`` against the caller's ``key`` quota; the throttle time in ms (0 within
    the quota), also set on the context so the connection stays muted for it."""
    throttle_ms = ctx.broker.client_quotas.throttle_ms(key, client_of(ctx), value)
    ctx.throttle.ms = max(ctx.throttle.ms, throttle_ms)
    return throttle_ms


def as_throttle_time(ms: int) -> timedelta:
    return timedelta(milliseconds=ms)


def apply_request_quota(ctx: RequestContext, response: Any, loop_seconds: float) -> Any:
    """Record the request's event-loop time against ``request_percentage``; over the quota,
    the response carries the larger of its own and this throttle time (Kafka answers the
    maximum of the byte-rate and request throttles) and the connection is muted for it."""
    if ctx.header.api_key in EXEMPT_API_KEYS or ctx.throttle.exempt:
        return response
    throttle_ms = record_and_throttle(ctx, REQUEST_PERCENTAGE, loop_seconds * SECONDS_TO_PERCENTAGE)
    if throttle_ms == 0 or response is None or not hasattr(response, "throttle_time"):
        return response
    throttle_time = as_throttle_time(throttle_ms)
    if response.throttle_time >= throttle_time:
        return response
    if isinstance(response, EncodedResponse):
        return response.with_throttle_time(throttle_time)
    return dataclasses.replace(response, throttle_time=throttle_time)
