"""The produce and fetch paths' use of client quotas: record, answer the throttle time and
have the connection muted for it (KIP-219)."""

from __future__ import annotations

from datetime import timedelta

from mirrorsim.broker.handlers.base import RequestContext
from mirrorsim.broker.quotas.manager import Client


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
