"""Which message class serves each (api key, version): kio's generated classes plus ours.

Mirror RPCs and versions kio lacks are registered by ``mirrorsim.protocol.messages``,
which the lookups import on first use, so no caller can see the registry without them.
"""

from __future__ import annotations

import importlib
from functools import cache

from kio.index import load_payload_module
from kio.schema.index import api_key_map, schema_name_map
from kio.static.constants import EntityType

_extra_requests: dict[tuple[int, int], type] = {}
_extra_responses: dict[tuple[int, int], type] = {}


def register(api_key: int, version: int, request: type, response: type) -> None:
    """Add a message pair kio does not ship (new RPCs or newer versions)."""
    _extra_requests[(api_key, version)] = request
    _extra_responses[(api_key, version)] = response
    request_class.cache_clear()
    response_class.cache_clear()


@cache
def _ensure_messages_registered() -> None:
    importlib.import_module("mirrorsim.protocol.messages")


def kio_versions(api_key: int) -> tuple[int, int] | None:
    name = api_key_map.get(api_key)
    if name is None:
        return None
    versions = sorted(schema_name_map[name])
    return versions[0], versions[-1]


def supported_versions() -> dict[int, tuple[int, int]]:
    """(min, max) version per API key across kio and registered messages (for ApiVersions).

    Registered versions extend a key's range only when contiguous with it, because
    ApiVersions advertises a range and a gap would promise a version nobody can decode.
    """
    _ensure_messages_registered()
    ranges = {key: versions for key in api_key_map if (versions := kio_versions(key))}
    for key, version in sorted(_extra_requests):
        low, high = ranges.get(key, (version, version - 1))
        if low <= version <= high + 1:
            ranges[key] = (low, max(high, version))
    return ranges


@cache
def request_class(api_key: int, version: int) -> type | None:
    _ensure_messages_registered()
    extra = _extra_requests.get((api_key, version))
    if extra is not None:
        return extra
    return _kio_class(api_key, version, EntityType.request, "Request")


@cache
def response_class(api_key: int, version: int) -> type | None:
    _ensure_messages_registered()
    extra = _extra_responses.get((api_key, version))
    if extra is not None:
        return extra
    return _kio_class(api_key, version, EntityType.response, "Response")


def _kio_class(api_key: int, version: int, kind: EntityType, suffix: str) -> type | None:
    name = api_key_map.get(api_key)
    if name is None or version not in schema_name_map[name]:
        return None
    module = load_payload_module(api_key, version, kind)
    for attr in dir(module):
        obj = getattr(module, attr)
        if (
            isinstance(obj, type)
            and attr.endswith(suffix)
            and getattr(obj, "__type__", None) == kind
        ):
            return obj
    return None
