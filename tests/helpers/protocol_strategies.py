"""Hypothesis strategies for protocol message entities, ours and kio's."""

import datetime
import typing
from dataclasses import fields, is_dataclass
from functools import cache
from typing import Any

from hypothesis import strategies as st
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.schema.index import api_key_map, schema_name_map

from mirrorsim.protocol.messages import MESSAGE_PAIRS
from mirrorsim.protocol.registry import request_class, response_class

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
"""Short strings without lone surrogates: any value a Kafka string field can carry."""
INT8 = st.integers(-(2**7), 2**7 - 1)
INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)


_INTS = {
    "int8": INT8,
    "int16": st.integers(-(2**15), 2**15 - 1),
    "int32": INT32,
    "int64": INT64,
    "uint8": st.integers(0, 2**8 - 1),
    "uint16": st.integers(0, 2**16 - 1),
    "uint32": st.integers(0, 2**32 - 1),
    "uint64": st.integers(0, 2**64 - 1),
}


def _primitive(kafka_type: str, nullable: bool) -> st.SearchStrategy[Any]:
    if kafka_type in _INTS:
        base = _INTS[kafka_type]
    elif kafka_type == "float64":
        base = st.floats(allow_nan=False, allow_infinity=False)
    elif kafka_type == "bool":
        base = st.booleans()
    elif kafka_type == "string":
        base = TEXT
    elif kafka_type in ("bytes", "records"):
        base = st.binary(max_size=16)
    elif kafka_type == "uuid":
        return st.none() | st.uuids().filter(lambda u: u.int != 0)
    elif kafka_type == "error_code":
        base = st.sampled_from(list(KioErrorCode))
    elif kafka_type == "timedelta_i32":
        base = st.integers(-(2**31), 2**31 - 1).map(lambda ms: datetime.timedelta(milliseconds=ms))
    elif kafka_type == "timedelta_i64":
        base = st.integers(-(2**40), 2**40).map(lambda ms: datetime.timedelta(milliseconds=ms))
    elif kafka_type == "datetime_i64":
        base = st.integers(0, 2**41).map(lambda ms: _EPOCH + datetime.timedelta(milliseconds=ms))
    else:
        raise AssertionError(f"no strategy for {kafka_type}")
    return st.none() | base if nullable else base


def _unwrap(annotation: Any) -> tuple[Any, bool]:
    args = typing.get_args(annotation)
    if type(None) in args:
        return next(a for a in args if a is not type(None)), True
    return annotation, False


@cache
def entities(cls: type) -> st.SearchStrategy[Any]:
    """Instances of ``cls`` with every field drawn, tagged ones included."""
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, st.SearchStrategy[Any]] = {}
    for field in fields(cls):
        inner, nullable = _unwrap(hints[field.name])
        tagged = "tag" in field.metadata
        if typing.get_origin(inner) is tuple:
            item_type = typing.get_args(inner)[0]
            item = (
                st.deferred(lambda t=item_type: entities(t))
                if is_dataclass(item_type)
                else _primitive(field.metadata["kafka_type"], False)
            )
            strategy = st.lists(item, max_size=3).map(tuple)
            kwargs[field.name] = st.none() | strategy if nullable else strategy
        elif is_dataclass(inner):
            strategy = st.deferred(lambda t=inner: entities(t))
            kwargs[field.name] = st.none() | strategy if nullable and not tagged else strategy
        else:
            kwargs[field.name] = _primitive(field.metadata["kafka_type"], nullable)
    return st.builds(cls, **kwargs)


def _kio_message_classes() -> list[type]:
    classes = []
    for key, name in api_key_map.items():
        for version in schema_name_map[name]:
            for lookup in (request_class, response_class):
                cls = lookup(key, version)
                if cls is not None and cls.__module__.startswith("kio."):
                    classes.append(cls)
    return classes


KIO_CLASSES = _kio_message_classes()


OUR_CLASSES = [cls for _, _, req, resp in MESSAGE_PAIRS for cls in (req, resp)]
