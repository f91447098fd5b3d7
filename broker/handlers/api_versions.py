"""ApiVersions: advertise exactly the registered handlers' version ranges."""

from __future__ import annotations

from typing import Any

from mirrorsim.broker.handlers.base import HANDLERS, RequestContext, handles
from mirrorsim.broker.handlers.response import NO_THROTTLE, respond
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.framing import API_VERSIONS_KEY
from mirrorsim.protocol.registry import request_class


def supported_api_versions() -> list[dict[str, int]]:
    return [
        {"api_key": key, "min_version": reg.min_version, "max_version": reg.max_version}
        for key, reg in sorted(HANDLERS.items())
    ]


def unsupported_version_response() -> Any:
    """The v0 answer to an ApiVersions version newer than ours (Kafka's KIP-511 rule)."""
    request_v0 = request_class(API_VERSIONS_KEY, 0)
    assert request_v0 is not None
    return respond(
        request_v0(),
        {"error_code": ErrorCode.UNSUPPORTED_VERSION, "api_keys": supported_api_versions()},
    )


@handles(API_VERSIONS_KEY, min_version=0, max_version=4)
async def handle(ctx: RequestContext, body: Any) -> Any:
    return respond(
        body,
        {
            "error_code": ErrorCode.NONE,
            "api_keys": supported_api_versions(),
            "throttle_time": NO_THROTTLE,
        },
    )
