"""Build the response of the request's own version from one version-independent dict.

Handlers describe a response once, with every field any version has; ``respond`` keeps
the fields that exist in the version the client asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from mirrorsim.protocol.builder import build
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.registry import response_class

NO_THROTTLE = timedelta(0)


def respond(request: Any, fields: Mapping[str, Any]) -> Any:
    return build(_response_class_of(request), fields)


def response_field_names(request: Any) -> frozenset[str]:
    """The top-level fields of the response to ``request``, for the few answers written
    once for several APIs (a refusal every mirror RPC gives the same way)."""
    return frozenset(_response_class_of(request).__dataclass_fields__)


def _response_class_of(request: Any) -> type:
    cls = response_class(int(request.__api_key__), int(request.__version__))
    if cls is None:
        raise LookupError(f"no response class for {type(request).__name__}")
    return cls


def error_fields(error: KafkaError | None) -> dict[str, Any]:
    if error is None:
        return {"error_code": ErrorCode.NONE, "error_message": None}
    return {"error_code": error.code, "error_message": error.message}
