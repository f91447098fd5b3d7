"""Build a message of whichever version was negotiated from one version-independent description.

Kafka's messages grow fields version by version; the client negotiates the version per
broker, so callers describe a request once with plain dicts and lists, and ``build`` keeps
the fields that exist in the chosen version, turning nested dicts into that version's
nested classes. A field the version requires but the caller did not give is an error, so a
newer mandatory field is never silently defaulted; a name that no version of the message
has is an error too, so a misspelt field is never silently dropped. The broker's handlers
build their responses the same way, so this lives in ``protocol/`` below both sides.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from functools import cache
from typing import Any

from kio.static.constants import EntityType

from mirrorsim.protocol.registry import request_class, response_class, supported_versions


class RequestBuildError(TypeError):
    """The description lacks a field the chosen version requires, or names a field that no
    version of the message has."""


def build_request(api_key: int, version: int, fields: Mapping[str, Any]) -> Any:
    cls = request_class(api_key, version)
    if cls is None:
        raise RequestBuildError(f"no message class for api key {api_key} version {version}")
    return build(cls, fields)


def build(cls: type, fields: Mapping[str, Any]) -> Any:
    """An instance of message ``cls`` from a description valid for any of its versions."""
    return _build(cls, fields, _message_of(cls), cls.__name__, ())


def build_nested(cls: type, path: tuple[str, ...], fields: Mapping[str, Any]) -> Any:
    """The part of message ``cls`` at ``path`` (field names from the top), built from a
    description valid for any version exactly as ``build`` builds it inside the whole
    message: a part that is encoded on its own (a Metadata response's topic entry)
    accepts the same descriptions as the whole."""
    nested = cls
    for step in path:
        found = next((entity for name, entity, _ in _plan(nested) if name == step), None)
        if found is None:
            raise RequestBuildError(f"{cls.__name__} has no nested message at {'.'.join(path)}")
        nested = found
    return _build(nested, fields, _message_of(cls), cls.__name__, path)


def _build(
    cls: type,
    fields: Mapping[str, Any],
    message: tuple[int, bool] | None,
    root: str,
    path: tuple[str, ...],
) -> Any:
    """``root`` names the top-level class and ``path`` the field names down to ``cls``."""
    if not _allowed_names(cls, message, path).issuperset(fields):
        unknown = ", ".join(sorted(set(fields) - _allowed_names(cls, message, path)))
        where = ".".join((root, *path))
        raise RequestBuildError(f"{where} has no field {unknown} in any version")
    kwargs: dict[str, Any] = {}
    for name, entity, required in _plan(cls):
        if name in fields:
            value = fields[name]
            kwargs[name] = (
                value if entity is None else _convert(entity, value, message, root, (*path, name))
            )
        elif required:
            raise RequestBuildError(
                f"{cls.__name__} v{cls.__version__} needs field {name!r}"  # type: ignore[attr-defined]
            )
    return cls(**kwargs)


@cache
def _allowed_names(
    cls: type, message: tuple[int, bool] | None, path: tuple[str, ...]
) -> frozenset[str]:
    """The names a description of ``cls`` at ``path`` may hold: those of any version of
    its message there, or the class's own for a class outside the registry."""
    across_versions = _names_in_any_version(message, path) if message else frozenset()
    return across_versions or frozenset(name for name, _, _ in _plan(cls))


def _message_of(cls: type) -> tuple[int, bool] | None:
    """(api key, is a request) of a top-level message class; None for anything else."""
    kind = getattr(cls, "__type__", None)
    if kind not in (EntityType.request, EntityType.response):
        return None
    return int(cls.__api_key__), kind is EntityType.request  # type: ignore[attr-defined]


@cache
def _names_in_any_version(message: tuple[int, bool], path: tuple[str, ...]) -> frozenset[str]:
    """Every field name at ``path`` in any version of the message: a description written
    once for all versions may hold any of them, and nothing else."""
    api_key, is_request = message
    lookup = request_class if is_request else response_class
    low, high = supported_versions().get(api_key, (0, -1))
    names: set[str] = set()
    for version in range(low, high + 1):
        cls: type | None = lookup(api_key, version)
        for step in path:
            if cls is None:
                break
            cls = next((entity for name, entity, _ in _plan(cls) if name == step), None)
        if cls is not None:
            names.update(name for name, _, _ in _plan(cls))
    return frozenset(names)


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


def _convert(
    entity: type,
    value: Any,
    message: tuple[int, bool] | None,
    root: str,
    path: tuple[str, ...],
) -> Any:
    if value is None:
        return None
    if isinstance(value, Mapping):
        return _build(entity, value, message, root, path)
    return tuple(
        _build(entity, item, message, root, path) if isinstance(item, Mapping) else item
        for item in value
    )


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
