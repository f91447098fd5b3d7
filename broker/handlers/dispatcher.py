"""Route one request frame to its handler and encode the answer, with Kafka's rules for
requests the broker cannot serve.

- ApiVersions at a version newer than ours: a v0 response carrying UNSUPPORTED_VERSION
  and our supported list, so the client can retry at a version we speak.
- Any other unknown api key or unsupported version, or an undecodable request: Kafka
  closes the connection; we do the same and say why in the log.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from mirrorsim.broker.handlers.api_versions import unsupported_version_response
from mirrorsim.broker.handlers.base import HANDLERS, RequestContext
from mirrorsim.broker.handlers.quota_throttle import apply_request_quota
from mirrorsim.broker.network.connection import CloseConnection, Connection
from mirrorsim.broker.network.loop_time import LoopTime
from mirrorsim.broker.network.sasl_gate import check_authenticated
from mirrorsim.protocol.framing import (
    API_VERSIONS_KEY,
    FrameBuffers,
    FrameError,
    decode_request,
    encode_response_buffers,
    peek_header,
)

log = logging.getLogger(__name__)


class Dispatcher:
    def __init__(self, broker: Any) -> None:
        self._broker = broker

    async def __call__(self, conn: Connection, frame: bytes | memoryview) -> FrameBuffers | None:
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
        started = time.perf_counter()
        handling = LoopTime(registration.handler(ctx, request.body))
        try:
            response = await handling
        except Exception as exc:
            log.exception("handler for api key %d v%d failed", api_key, version)
            raise CloseConnection(f"internal error handling api key {api_key}: {exc}") from exc
        response = apply_request_quota(ctx, response, handling.seconds)
        if ctx.throttle.ms > 0:
            conn.mute_after_response(ctx.throttle.ms / 1000)
        encoded = (
            None
            if response is None
            else encode_response_buffers(
                response, api_version=version, correlation_id=correlation_id
            )
        )
        self._broker.metrics.requests.observe(
            api_key,
            version,
            request_size=len(frame),
            response_size=sum(map(len, encoded or ())),
            seconds=time.perf_counter() - started,
            response=response,
        )
        return encoded
