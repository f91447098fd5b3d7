"""Broker configs that make heartbeats, metadata refresh and replica fetches fast in tests."""

from __future__ import annotations

FAST = {
    "broker.heartbeat.interval.ms": 100,
    "broker.session.timeout.ms": 1500,
    "metadata.refresh.interval.ms": 100,
    "replica.fetch.wait.max.ms": 100,
    "replica.fetch.backoff.ms": 50,
}
