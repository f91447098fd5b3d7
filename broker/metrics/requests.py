"""Kafka's ``kafka.network:type=RequestMetrics`` per API, the mirror RPCs included.

Kafka's meters (RequestsPerSec, ErrorsPerSec) become counters (Prometheus derives rates
with ``rate()``); TotalTimeMs becomes a latency histogram in seconds. The ``request`` label
is Kafka's API name (``Produce``, ``Fetch``, ``CreateMirror``...). As in Kafka, every
error code a response carries is counted, NONE included, so error ratios need no other
series.
"""

from __future__ import annotations

import dataclasses
from collections import Counter as Tally
from functools import cache
from typing import Any

from mirrorsim.protocol.errors import error_code_from_wire
from mirrorsim.protocol.registry import request_class
from prometheus_client import CollectorRegistry, Counter, Histogram

LATENCY_BUCKETS_S = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
PREFIX = "kafka_network_request_metrics"


@cache
def api_name(api_key: int, version: int) -> str:
    cls = request_class(api_key, version)
    if cls is None:
        return f"ApiKey{api_key}"
    return cls.__name__.removesuffix("Request")


def error_counts(body: Any) -> Tally[str]:
    """Every ``error_code`` in a response body, by error name (Kafka's ``errorCounts``)."""
    tally: Tally[str] = Tally()
    pending = [body]
    while pending:
        node = pending.pop()
        if isinstance(node, tuple | list):
            pending.extend(node)
        elif dataclasses.is_dataclass(node):
            for field in dataclasses.fields(node):
                value = getattr(node, field.name)
                if field.name == "error_code":
                    code = error_code_from_wire(int(value))
                    tally[getattr(code, "name", str(code))] += 1
                elif isinstance(value, tuple | list) or dataclasses.is_dataclass(value):
                    pending.append(value)
    return tally


class RequestMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            f"{PREFIX}_requests",
            "Requests received (RequestsPerSec).",
            ["request", "version"],
            registry=registry,
        )
        self.errors = Counter(
            f"{PREFIX}_errors",
            "Error codes in responses (ErrorsPerSec).",
            ["request", "error"],
            registry=registry,
        )
        self.total_time = Histogram(
            f"{PREFIX}_total_time_seconds",
            "Time from request read to response ready (TotalTimeMs).",
            ["request"],
            buckets=LATENCY_BUCKETS_S,
            registry=registry,
        )
        self.request_bytes = Counter(
            f"{PREFIX}_request_bytes",
            "Request sizes (RequestBytes).",
            ["request"],
            registry=registry,
        )
        self.response_bytes = Counter(
            f"{PREFIX}_response_bytes",
            "Response sizes.",
            ["request"],
            registry=registry,
        )

    def observe(
        self,
        api_key: int,
        version: int,
        *,
        request_size: int,
        response_size: int,
        seconds: float,
        response: Any,
    ) -> None:
        """Account one handled request; ``response`` is the body (None when none is sent)."""
        name = api_name(api_key, version)
        self.requests.labels(name, str(version)).inc()
        self.total_time.labels(name).observe(seconds)
        self.request_bytes.labels(name).inc(request_size)
        self.response_bytes.labels(name).inc(response_size)
        if response is not None:
            for error, count in error_counts(response).items():
                self.errors.labels(name, error).inc(count)
