"""Build a message of whichever version was negotiated from one version-independent description.

Kafka's messages grow fields version by version; the client negotiates the version per
broker, so callers describe a request once with plain dicts and lists, and ``build`` keeps
the fields that exist in the chosen version, turning nested dicts into that version's
nested classes. A field the version requires but the caller did not give is an error, so a
newer mandatory field is never silently defaulted. The broker's handlers build their
responses the same way, so this lives in ``protocol/`` below both sides.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from functools import cache
from typing import Any

from mirrorsim.protocol.registry import request_class


class RequestBuildError(TypeError):
    """The description lacks a field the chosen version requires."""


def build_request(api_key: int, version: int, fields: Mapping[str, Any]) -> Any:
    cls = request_class(api_key, version)
    if cls is None:
        raise RequestBuildError(f"no message class for api key {api_key} version {version}")
    return build(cls, fields)


def build(cls: type, fields: Mapping[str, Any]) -> Any:
    kwargs: dict[str, Any] = {}
    for name, entity, required in _plan(cls):
        if name in fields:
            value = fields[name]
            kwargs[name] = value if entity is None else _convert(entity, value)
        elif required:
            raise RequestBuildError(
                f"{cls.__name__} v{cls.__version__} needs field {name!r}"  # type: ignore[attr-defined]
            )
    return cls(**kwargs)


@cache
def _plan(cls: type) -> tuple[tuple[str, type | None, bool], ...]:
    """(field name, nested message class or None, required) per field, worked out once
    per class: inspecting fields and type hints cost more than building the request."""
    hints = typing.get_type_hints(cls)
    return tuple(
        (
            field.name,
            _nested_entity(hints[field.name]),
            field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING,
        )
        for field in dataclasses.fields(cls)
    )


def _convert(entity: type, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, Mapping):
        return build(entity, value)
    return tuple(build(entity, item) if isinstance(item, Mapping) else item for item in value)


def _nested_entity(hint: Any) -> type | None:
    """The dataclass inside ``X``, ``X | None`` or ``tuple[X, ...]``, if any."""
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return hint
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType, tuple):
        for arg in typing.get_args(hint):
            found = _nested_entity(arg)
            if found is not None:
                return found
    return None
