"""Which message class serves each (api key, version): kio's generated classes plus ours.

Mirror RPCs and versions kio lacks are registered by ``mirrorsim.protocol.messages``.
"""

from __future__ import annotations

from functools import cache

from kio.index import load_payload_module
from kio.schema.index import api_key_map, schema_name_map

_extra_requests: dict[tuple[int, int], type] = {}
_extra_responses: dict[tuple[int, int], type] = {}


def register(api_key: int, version: int, request: type, response: type) -> None:
    """Add a message pair kio does not ship (new RPCs or newer versions)."""
    _extra_requests[(api_key, version)] = request
    _extra_responses[(api_key, version)] = response
    request_class.cache_clear()
    response_class.cache_clear()


def kio_versions(api_key: int) -> tuple[int, int] | None:
    name = api_key_map.get(api_key)
    if name is None:
        return None
    versions = sorted(schema_name_map[name])
    return versions[0], versions[-1]


@cache
def request_class(api_key: int, version: int) -> type | None:
    extra = _extra_requests.get((api_key, version))
    if extra is not None:
        return extra
    return _kio_class(api_key, version, "request", "Request")


@cache
def response_class(api_key: int, version: int) -> type | None:
    extra = _extra_responses.get((api_key, version))
    if extra is not None:
        return extra
    return _kio_class(api_key, version, "response", "Response")


def _kio_class(api_key: int, version: int, kind: str, suffix: str) -> type | None:
    name = api_key_map.get(api_key)
    if name is None or version not in schema_name_map[name]:
        return None
    from kio.static.constants import EntityType

    module = load_payload_module(api_key, version, EntityType[kind])
    for attr in dir(module):
        obj = getattr(module, attr)
        if (
            isinstance(obj, type)
            and attr.endswith(suffix)
            and getattr(obj, "__type__", None) == EntityType[kind]
        ):
            return obj
    return None
