"""Route one request frame to its handler and encode the answer, with Kafka's rules for
requests the broker cannot serve.

- ApiVersions at a version newer than ours: a v0 response carrying UNSUPPORTED_VERSION
  and our supported list, so the client can retry at a version we speak.
- Any other unknown api key or unsupported version, or an undecodable request: Kafka
  closes the connection; we do the same and say why in the log.

Each handled request is accounted in the broker's RequestMetrics: counts and sizes at once,
its times (``RequestTimes``) once the connection reports the response sent.
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Any

from mirrorsim.broker.handlers.api_versions import unsupported_version_response
from mirrorsim.broker.handlers.base import HANDLERS, RequestContext
from mirrorsim.broker.handlers.broker_port import HandlerBroker
from mirrorsim.broker.handlers.quota_throttle import apply_request_quota
from mirrorsim.broker.metrics.requests import RequestMetrics, RequestTimes
from mirrorsim.broker.network.connection import CloseConnection, Connection, RequestTiming
from mirrorsim.broker.network.loop_time import LoopTime
from mirrorsim.broker.network.sasl_gate import check_authenticated
from mirrorsim.broker.replica.purgatory import (
    ParkedTime,
    end_parked_time,
    parked_time_of_this_request,
)
from mirrorsim.protocol.framing import (
    API_VERSIONS_KEY,
    FrameBuffers,
    FrameError,
    decode_request,
    encode_response_buffers,
    peek_header,
)
from mirrorsim.protocol.registry import request_class, response_class

log = logging.getLogger(__name__)


def preload_message_classes() -> None:
    """Import the request and response classes of every version this broker serves.

    They are otherwise imported by the first request of each kind, and an import opens
    files: a broker out of descriptors would fail that request and drop its connection.
    One that cannot be imported now (out of descriptors already) is left to its first
    request, as before.
    """
    for api_key, registration in HANDLERS.items():
        for version in range(registration.min_version, registration.max_version + 1):
            with contextlib.suppress(ImportError, OSError):
                request_class(api_key, version)
                response_class(api_key, version)


class Dispatcher:
    def __init__(self, broker: HandlerBroker) -> None:
        self._broker = broker

    async def __call__(
        self, conn: Connection, frame: bytes | memoryview, timing: RequestTiming
    ) -> FrameBuffers | None:
        try:
            api_key, version, correlation_id = peek_header(frame)
        except FrameError as exc:
            raise CloseConnection(f"malformed request header: {exc}") from None
        registration = HANDLERS.get(api_key)
        if api_key == API_VERSIONS_KEY and (
            registration is None or version > registration.max_version
        ):
            return encode_response_buffers(
                unsupported_version_response(), api_version=0, correlation_id=correlation_id
            )
        if registration is None:
            raise CloseConnection(f"unknown api key {api_key} (correlation id {correlation_id})")
        if not registration.min_version <= version <= registration.max_version:
            raise CloseConnection(
                f"unsupported version {version} of api key {api_key}; supported "
                f"{registration.min_version}..{registration.max_version}"
            )
        check_authenticated(conn.session, api_key)
        try:
            request = decode_request(frame)
        except FrameError as exc:
            raise CloseConnection(f"malformed request: {exc}") from None
        ctx = RequestContext(
            header=request.header,
            broker=self._broker,
            client_host=conn.client_host,
            principal=conn.session.principal,
            session=conn.session,
            request_size=len(frame),
        )
        handling = LoopTime(registration.handler(ctx, request.body))
        parked, token = parked_time_of_this_request()
        try:
            response = await handling
        except Exception as exc:
            log.exception("handler for api key %d v%d failed", api_key, version)
            raise CloseConnection(f"internal error handling api key {api_key}: {exc}") from exc
        finally:
            end_parked_time(token)
        response = apply_request_quota(ctx, response, handling.seconds)
        if ctx.throttle.ms > 0:
            conn.mute_after_response(ctx.throttle.ms / 1000)
        timing.response_ready = time.perf_counter()
        encoded = (
            None
            if response is None
            else encode_response_buffers(
                response, api_version=version, correlation_id=correlation_id
            )
        )
        metrics: RequestMetrics = self._broker.metrics.requests
        metrics.observe(
            api_key,
            version,
            request_size=len(frame),
            response_size=sum(map(len, encoded or ())),
            response=response,
        )
        throttle = _throttle_seconds(response)
        timing.on_sent = lambda sent: metrics.observe_times(
            api_key, version, _times(sent, parked, throttle)
        )
        return encoded


def _throttle_seconds(response: Any) -> float:
    throttle = getattr(response, "throttle_time", None)
    if throttle is None:
        return 0.0
    return float(throttle.total_seconds())


def _times(timing: RequestTiming, parked: ParkedTime, throttle: float) -> RequestTimes:
    handling = timing.response_ready - timing.dequeued
    remote = min(parked.seconds, handling)
    return RequestTimes(
        request_queue=timing.dequeued - timing.received,
        local=handling - remote,
        remote=remote,
        response_queue=timing.send_started - timing.response_ready,
        response_send=timing.sent - timing.send_started,
        throttle=throttle,
        total=timing.sent - timing.received,
    )
