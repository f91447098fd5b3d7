"""Kafka's ``kafka.network:type=RequestMetrics`` per API, the mirror RPCs included.

Kafka's meters (RequestsPerSec, ErrorsPerSec) become counters (Prometheus derives rates
with ``rate()``); its request timers become latency histograms in seconds, split as Kafka
splits them (``RequestTimes``): RequestQueueTime (read, waiting for the connection's one
request at a time), LocalTime (handling), RemoteTime (parked in purgatory: acks=all,
Fetch long polls), ResponseQueueTime (encoding, handing to the socket), ResponseSendTime
(on the socket), TotalTime (read to sent) and ThrottleTime (the throttle the response
announces). The ``request`` label
is Kafka's API name (``Produce``, ``Fetch``, ``CreateMirror``...). As in Kafka, every
error code a response carries is counted, NONE included, so error ratios need no other
series.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections import Counter as Tally
from functools import cache
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram

from mirrorsim.protocol.errors import error_code_from_wire
from mirrorsim.protocol.messages.encoded_response import EncodedResponse
from mirrorsim.protocol.registry import request_class

LATENCY_BUCKETS_S = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
PREFIX = "kafka_network_request_metrics"


@cache
def api_name(api_key: int, version: int) -> str:
    cls = request_class(api_key, version)
    if cls is None:
        return f"ApiKey{api_key}"
    return cls.__name__.removesuffix("Request")


def error_counts(body: Any) -> Tally[str]:
    """Every ``error_code`` in a response body, by error name (Kafka's ``errorCounts``).

    Only the fields whose declared type can hold an ``error_code`` are visited (see
    ``_error_paths``), so a Fetch response's records and a Metadata response's replica
    lists cost nothing. A body that encodes itself (``EncodedResponse``) counts its own.
    """
    tally: Tally[str] = Tally()
    pending = [body]
    while pending:
        node = pending.pop()
        if isinstance(node, tuple | list):
            pending.extend(node)
            continue
        if isinstance(node, EncodedResponse):
            for code, count in node.error_code_counts():
                tally[_error_name(code)] += count
            continue
        paths = _error_paths(type(node))
        if paths is None:
            continue
        if paths.has_error_code:
            tally[_error_name(node.error_code)] += 1
        for name in paths.nested:
            value = getattr(node, name)
            if value is not None:
                pending.append(value)
    return tally


@dataclasses.dataclass(frozen=True, slots=True)
class _ErrorPaths:
    has_error_code: bool
    nested: tuple[str, ...]


@cache
def _error_name(code: int) -> str:
    found = error_code_from_wire(int(code))
    return getattr(found, "name", str(found))


@cache
def _error_paths(cls: type) -> _ErrorPaths | None:
    """Where ``error_code`` fields can be below ``cls``; None when nowhere (or not a message)."""
    if not dataclasses.is_dataclass(cls):
        return None
    return _paths_of(cls, frozenset())


def _paths_of(cls: type, seen: frozenset[type]) -> _ErrorPaths | None:
    try:
        hints = typing.get_type_hints(cls)
    except Exception:
        hints = {}
    fields = dataclasses.fields(cls)
    has_error_code = any(f.name == "error_code" for f in fields)
    nested = tuple(
        f.name
        for f in fields
        if f.name != "error_code" and _may_hold_errors(hints.get(f.name, Any), seen | {cls})
    )
    if not has_error_code and not nested:
        return None
    return _ErrorPaths(has_error_code, nested)


def _may_hold_errors(hint: Any, seen: frozenset[type]) -> bool:
    """Whether a value of type ``hint`` can contain an ``error_code``; unknown types can."""
    if hint is Any:
        return True
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return hint not in seen and _paths_of(hint, seen) is not None
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (tuple, list, typing.Union, types.UnionType):
        return any(_may_hold_errors(arg, seen) for arg in args if arg is not Ellipsis)
    return False


@dataclasses.dataclass(frozen=True, slots=True)
class RequestTimes:
    """One request's time, in seconds, by where it was spent."""

    request_queue: float
    local: float
    remote: float
    response_queue: float
    response_send: float
    throttle: float
    total: float


TIMERS = (
    ("request_queue", "RequestQueueTimeMs", "Time waiting to be handled after being read."),
    ("local", "LocalTimeMs", "Time being handled, parked time excluded."),
    ("remote", "RemoteTimeMs", "Time parked in purgatory (acks=all, long polls)."),
    ("response_queue", "ResponseQueueTimeMs", "Time from response ready to being sent."),
    ("response_send", "ResponseSendTimeMs", "Time sending the response."),
    ("throttle", "ThrottleTimeMs", "Throttle time the response announces."),
    ("total", "TotalTimeMs", "Time from request read to response sent."),
)
"""(``RequestTimes`` field, Kafka's name, help) of each request timer."""


@dataclasses.dataclass(frozen=True, slots=True)
class _ApiSeries:
    """The labelled series of one API version, looked up once: finding a child by its
    labels takes a lock and a tuple per call, ten times per request otherwise."""

    name: str
    requests: Any
    request_bytes: Any
    response_bytes: Any
    timers: tuple[tuple[str, Any], ...]


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
        self.timers = {
            field: Histogram(
                f"{PREFIX}_{field}_time_seconds",
                f"{help_text} ({kafka_name})",
                ["request"],
                buckets=LATENCY_BUCKETS_S,
                registry=registry,
            )
            for field, kafka_name, help_text in TIMERS
        }
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
        self._series: dict[tuple[int, int], _ApiSeries] = {}
        self._errors: dict[tuple[str, str], Any] = {}

    def _series_of(self, api_key: int, version: int) -> _ApiSeries:
        series = self._series.get((api_key, version))
        if series is None:
            name = api_name(api_key, version)
            series = self._series[api_key, version] = _ApiSeries(
                name,
                self.requests.labels(name, str(version)),
                self.request_bytes.labels(name),
                self.response_bytes.labels(name),
                tuple((field, timer.labels(name)) for field, timer in self.timers.items()),
            )
        return series

    def observe(
        self,
        api_key: int,
        version: int,
        *,
        request_size: int,
        response_size: int,
        response: Any,
    ) -> None:
        """Account one handled request; ``response`` is the body (None when none is sent)."""
        series = self._series_of(api_key, version)
        series.requests.inc()
        series.request_bytes.inc(request_size)
        series.response_bytes.inc(response_size)
        if response is not None:
            for error, count in error_counts(response).items():
                child = self._errors.get((series.name, error))
                if child is None:
                    child = self._errors[series.name, error] = self.errors.labels(
                        series.name, error
                    )
                child.inc(count)

    def observe_times(self, api_key: int, version: int, times: RequestTimes) -> None:
        """Account where one request's time went, once its response is sent."""
        for field, histogram in self._series_of(api_key, version).timers:
            histogram.observe(max(0.0, getattr(times, field)))
