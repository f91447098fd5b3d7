"""Prometheus metrics of one broker: its own registry, request metrics, mirror metrics and
the HTTP endpoint that serves them (see docs/operations.md for every name)."""

from mirrorsim.broker.metrics.broker_metrics import BrokerMetrics
from mirrorsim.broker.metrics.mirror import (
    FetcherStats,
    MirrorFetcherView,
    MirrorMetrics,
    PartitionLag,
    SyncError,
)
from mirrorsim.broker.metrics.requests import RequestMetrics

__all__ = [
    "BrokerMetrics",
    "FetcherStats",
    "MirrorFetcherView",
    "MirrorMetrics",
    "PartitionLag",
    "RequestMetrics",
    "SyncError",
]
