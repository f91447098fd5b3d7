"""ApiVersions: advertise exactly the registered handlers' version ranges, and the features.

``test.hidden.api.keys`` (a test aid) takes APIs out of the answer or caps their
version, so a cluster can play an older source; the handlers themselves stay registered.

From v3 the answer carries the supported feature ranges and the finalized levels with
their epoch, which is how ``Admin.describeFeatures`` learns them. As in Kafka, a v3
answer leaves out supported features whose range starts at 0 (older clients refuse
such a range), and a feature finalized at level 0 is absent from the finalized list,
which clients read as level 0. The finalized range is the single level (min = max).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mirrorsim.broker.handlers.base import HANDLERS, RequestContext, handles
from mirrorsim.broker.handlers.response import NO_THROTTLE, respond
from mirrorsim.broker.metadata.features import SUPPORTED_FEATURES, FinalizedFeatures
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.framing import API_VERSIONS_KEY
from mirrorsim.protocol.registry import request_class

FEATURES_WITH_MIN_ZERO_VERSION = 4
"""The first ApiVersions version whose answer may list a supported range starting at 0."""


def _version_caps(hidden: Iterable[str]) -> dict[int, int]:
    """``KEY`` → -1 (not advertised), ``KEY:MAX`` → MAX."""
    caps = {}
    for entry in hidden:
        key, _, max_version = entry.partition(":")
        caps[int(key)] = int(max_version) if max_version else -1
    return caps


def supported_api_versions(hidden: Iterable[str] = ()) -> list[dict[str, int]]:
    caps = _version_caps(hidden)
    advertised = []
    for key, reg in sorted(HANDLERS.items()):
        max_version = min(reg.max_version, caps.get(key, reg.max_version))
        if max_version >= reg.min_version:
            advertised.append(
                {"api_key": key, "min_version": reg.min_version, "max_version": max_version}
            )
    return advertised


def unsupported_version_response() -> Any:
    """The v0 answer to an ApiVersions version newer than ours (Kafka's KIP-511 rule)."""
    request_v0 = request_class(API_VERSIONS_KEY, 0)
    assert request_v0 is not None
    return respond(
        request_v0(),
        {"error_code": ErrorCode.UNSUPPORTED_VERSION, "api_keys": supported_api_versions()},
    )


def feature_fields(finalized: FinalizedFeatures, version: int) -> dict[str, Any]:
    """The v3+ feature fields for a response of ``version``."""
    return {
        "supported_features": [
            {"name": name, "min_version": r.min_version, "max_version": r.max_version}
            for name, r in sorted(SUPPORTED_FEATURES.items())
            if version >= FEATURES_WITH_MIN_ZERO_VERSION or r.min_version > 0
        ],
        "finalized_features_epoch": finalized.epoch,
        "finalized_features": [
            {"name": name, "max_version_level": level, "min_version_level": level}
            for name, level in finalized.levels().items()
            if level > 0
        ],
    }


@handles(API_VERSIONS_KEY, min_version=0, max_version=4)
async def handle(ctx: RequestContext, body: Any) -> Any:
    return respond(
        body,
        {
            "error_code": ErrorCode.NONE,
            "api_keys": supported_api_versions(ctx.broker.config("test.hidden.api.keys")),
            "throttle_time": NO_THROTTLE,
            **feature_fields(ctx.broker.snapshot.finalized_features, int(body.__version__)),
        },
    )
