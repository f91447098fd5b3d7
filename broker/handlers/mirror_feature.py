"""The ``mirror.version`` gate of the operator mirror RPCs.

At level 0 CreateMirror, AddTopicsToMirror, RemoveTopicsFromMirror, PauseMirrorTopics,
ResumeMirrorTopics, ListMirrors, DescribeMirrors and DeleteMirror answer
UNSUPPORTED_VERSION with the spec's message, before authorization or any work. The
level comes from the broker's metadata snapshot, so the check costs a dict lookup; a
change reaches every broker with its next metadata refresh. The inter-broker mirror RPCs
are not gated: mirrors that exist keep their state and their fetchers.
"""

from __future__ import annotations

import functools
from typing import Any

from mirrorsim.broker.handlers.base import Handler, RequestContext
from mirrorsim.broker.handlers.response import (
    NO_THROTTLE,
    error_fields,
    respond,
    response_field_names,
)
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.features import MIRROR_VERSION

MIRRORING_DISABLED = "Cluster mirroring is disabled (mirror.version=0)"


def mirroring_disabled(ctx: RequestContext) -> KafkaError | None:
    """UNSUPPORTED_VERSION while ``mirror.version`` is finalized at 0, else None."""
    if ctx.broker.snapshot.finalized_features.level(MIRROR_VERSION) >= 1:
        return None
    return KafkaError(ErrorCode.UNSUPPORTED_VERSION, MIRRORING_DISABLED)


def requires_mirroring(handler: Handler) -> Handler:
    """While mirroring is disabled, answer with the gate's error instead of running ``handler``.

    The refusal fills every field the eight responses have (``respond`` keeps those of
    the actual message): the top-level error, the mirror name, each requested topic with
    the same error, and no mirrors.
    """

    @functools.wraps(handler)
    async def gated(ctx: RequestContext, body: Any) -> Any:
        refused = mirroring_disabled(ctx)
        if refused is None:
            return await handler(ctx, body)
        refusal = {
            "throttle_time": NO_THROTTLE,
            **error_fields(refused),
            "mirror_name": getattr(body, "mirror_name", ""),
            "topics": [
                {"name": t.topic_name, "error_code": refused.code}
                for t in getattr(body, "topics", ())
            ],
            "mirrors": [],
        }
        has = response_field_names(body)
        return respond(body, {name: value for name, value in refusal.items() if name in has})

    return gated
