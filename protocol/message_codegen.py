"""Python message classes in kio's dataclass style, generated from Kafka's JSON schemas.

Kafka, kio and tansu all generate their message classes from the JSON schemas the KIPs
publish; the mirror RPCs are generated here the same way, so a field is added by editing a
schema, and twelve modules cannot drift apart by hand. This module is pure: schema text in,
module source out. ``scripts/generate_messages.py`` writes the modules and a test holds the
checked-in modules equal to what this produces.

Supported: what the mirror RPCs use (version 0, flexible; int8/16/32/64, bool, string,
uuid, arrays of those and of nested structs, nullable strings, tagged fields, defaults).
Anything else is refused with :class:`SchemaError` rather than guessed.
"""

from __future__ import annotations

import json
import re
import textwrap
from dataclasses import dataclass
from typing import Any

LINE_LENGTH = 100
INDENT = "    "


class SchemaError(ValueError):
    """The schema uses something the generator does not support, or is inconsistent."""


_PRIMITIVES = {"int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64"}
_TIMEDELTA_SUFFIX = "Ms"
_HEADERS = {"request": "RequestHeader", "response": "ResponseHeader"}
_GENERATED_NOTE = (
    "Generated from protocol/schemas/{request}.json and {response}.json by "
    "``scripts/generate_messages.py``: edit the schemas, not this file. Field names are kio's "
    "snake_case of the JSON names. Error codes are int16 on the wire: wrap them with "
    "``ErrorCode(...)``."
)


@dataclass(frozen=True)
class Schema:
    """One message schema: its JSON object and the ``//`` comment lines that precede it."""

    comments: tuple[str, ...]
    body: dict[str, Any]


def parse_schema(text: str) -> Schema:
    """Kafka's schema files are JSON with whole-line ``//`` comments."""
    comments: list[str] = []
    json_lines: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("//"):
            if not json_lines:
                comments.append(stripped[2:].strip())
            continue
        json_lines.append(line)
    try:
        body = json.loads("\n".join(json_lines))
    except json.JSONDecodeError as error:
        raise SchemaError(f"not JSON: {error}") from error
    if body.get("validVersions") != "0" or body.get("flexibleVersions") != "0+":
        raise SchemaError(f"{body.get('name')}: only version 0, flexible, is supported")
    return Schema(tuple(comments), body)


def snake_case(name: str) -> str:
    """kio's field names: ``TopicId`` -> ``topic_id``, ``MirrorLeaderEpoch`` ->
    ``mirror_leader_epoch``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def module_name(message_name: str) -> str:
    """``PauseMirrorTopicsRequest`` -> ``pause_mirror_topics``."""
    return snake_case(re.sub(r"(Request|Response)$", "", message_name))


class _Module:
    """Collects classes (nested ones first) and the names they import."""

    def __init__(self, api_key: int) -> None:
        self.api_key = api_key
        self.classes: list[str] = []
        self.class_names: set[str] = set()
        self.primitives: set[str] = {"i16"}
        self.uses_uuid = False
        self.uses_topic_name = False

    def add_class(self, name: str, kind: str, header: str, fields: list[dict[str, Any]]) -> None:
        if name in self.class_names:
            raise SchemaError(f"two structs named {name} in one module: rename one")
        self.class_names.add(name)
        lines = [
            "@dataclass(frozen=True, slots=True, kw_only=True)",
            f"class {name}:",
            f"{INDENT}__type__: ClassVar = EntityType.{kind}",
            f"{INDENT}__version__: ClassVar[i16] = i16(0)",
            f"{INDENT}__flexible__: ClassVar[bool] = True",
            f"{INDENT}__api_key__: ClassVar[i16] = i16({self.api_key})",
            f"{INDENT}__header_schema__: ClassVar[type[{header}]] = {header}",
        ]
        for spec in fields:
            lines.extend(self._field(spec, header))
        self.classes.append("\n".join(lines))

    def _field(self, spec: dict[str, Any], header: str) -> list[str]:
        name, kind = spec["name"], spec["type"]
        if spec.get("versions") != "0+":
            raise SchemaError(f"{name}: only versions 0+ is supported")
        metadata: dict[str, Any] = {}
        default: str | None = None
        if kind.startswith("[]"):
            element = kind[2:]
            if "fields" in spec:
                self.add_class(element, "nested", header, spec["fields"])
                annotation = f"tuple[{element}, ...]"
            else:
                annotation = f"tuple[{self._scalar(element, spec)}, ...]"
                metadata["kafka_type"] = element
            if "default" in spec:
                if spec["default"] != "[]":
                    raise SchemaError(f"{name}: an array's default can only be []")
                default = "()"
            python_name = snake_case(name)
        elif kind == "int32" and name.endswith(_TIMEDELTA_SUFFIX):
            self.primitives.add("i32Timedelta")
            annotation = "i32Timedelta"
            metadata["kafka_type"] = "timedelta_i32"
            python_name = snake_case(name.removesuffix(_TIMEDELTA_SUFFIX))
        else:
            annotation = self._scalar(kind, spec)
            metadata["kafka_type"] = kind
            python_name = snake_case(name)
            if "default" in spec:
                default = self._default(kind, spec["default"], name)
        if "tag" in spec:
            if spec.get("taggedVersions") != "0+" or default is None:
                raise SchemaError(f"{name}: a tagged field needs taggedVersions 0+ and a default")
            metadata["tag"] = int(spec["tag"])
        if metadata or default is not None:
            arguments = []
            if metadata:
                pairs = ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in metadata.items())
                arguments.append(f"metadata={{{pairs}}}")
            if default is not None:
                arguments.append(f"default={default}")
            declaration = f"{INDENT}{python_name}: {annotation} = field({', '.join(arguments)})"
        else:
            declaration = f"{INDENT}{python_name}: {annotation}"
        return [declaration, *_docstring(spec.get("about", ""), INDENT)]

    def _scalar(self, kind: str, spec: dict[str, Any]) -> str:
        nullable = spec.get("nullableVersions") == "0+"
        if kind in _PRIMITIVES:
            self.primitives.add(_PRIMITIVES[kind])
            annotation = _PRIMITIVES[kind]
        elif kind == "bool":
            annotation = "bool"
        elif kind == "uuid":
            self.uses_uuid = True
            return "uuid.UUID | None"
        elif kind == "string":
            if spec.get("entityType") == "topicName":
                self.uses_topic_name = True
                annotation = "TopicName"
            else:
                annotation = "str"
        else:
            raise SchemaError(f"{spec['name']}: type {kind} is not supported")
        if nullable and kind != "string":
            raise SchemaError(f"{spec['name']}: only strings may be nullable")
        return f"{annotation} | None" if nullable else annotation

    def _default(self, kind: str, value: str, name: str) -> str:
        if value == "null":
            return "None"
        if kind in _PRIMITIVES:
            return f"{_PRIMITIVES[kind]}({int(value)})"
        if kind == "bool":
            if value not in ("true", "false"):
                raise SchemaError(f"{name}: bool default {value!r}")
            return "True" if value == "true" else "False"
        if kind == "string":
            return json.dumps(value)
        raise SchemaError(f"{name}: no default for type {kind}")

    def source(self, docstring: str) -> str:
        imports = []
        if self.uses_uuid:
            imports.append("import uuid")
        imports += ["from dataclasses import dataclass, field", "from typing import ClassVar", ""]
        imports += [
            "from kio.schema.request_header.v2.header import RequestHeader",
            "from kio.schema.response_header.v1.header import ResponseHeader",
        ]
        if self.uses_topic_name:
            imports.append("from kio.schema.types import TopicName")
        imports.append("from kio.static.constants import EntityType")
        primitives = ", ".join(sorted(self.primitives))
        imports.append(f"from kio.static.primitive import {primitives}")
        return "\n".join([docstring, "", *imports, "", "", "\n\n\n".join(self.classes)]) + "\n"


def _docstring(text: str, indent: str) -> list[str]:
    text = " ".join(text.split())
    one_line = f'{indent}"""{text}"""'
    if len(one_line) <= LINE_LENGTH:
        return [one_line]
    wrapped = textwrap.wrap(text, width=LINE_LENGTH - len(indent) - 3)
    rest = [f"{indent}{line}" for line in wrapped[1:]]
    return [f'{indent}"""{wrapped[0]}', *rest, f'{indent}"""']


def _module_docstring(request: Schema, response: Schema) -> str:
    """The request schema's leading comments (paragraphs split by an empty ``//`` line; the
    first is the title) and the note that says where the module comes from."""
    paragraphs: list[list[str]] = [[]]
    for line in request.comments:
        if line:
            paragraphs[-1].append(line)
        elif paragraphs[-1]:
            paragraphs.append([])
    texts = [" ".join(words) for words in paragraphs if words]
    if not texts:
        raise SchemaError(f"{request.body['name']}: the schema needs a leading // comment")
    names = {"request": request.body["name"], "response": response.body["name"]}
    texts.append(_GENERATED_NOTE.format(**names))
    lines = [f'"""{texts[0]}']
    for text in texts[1:]:
        lines.append("")
        lines.extend(textwrap.wrap(text, width=LINE_LENGTH - 4))
    lines.append('"""')
    return "\n".join(lines)


def generate_module(request_text: str, response_text: str) -> str:
    """The module holding one RPC's request and response classes (nested structs first)."""
    request, response = parse_schema(request_text), parse_schema(response_text)
    api_key = int(request.body["apiKey"])
    if int(response.body["apiKey"]) != api_key:
        raise SchemaError("the request and the response name different API keys")
    module = _Module(api_key)
    for schema, kind in ((request, "request"), (response, "response")):
        if schema.body.get("type") != kind:
            raise SchemaError(f"{schema.body.get('name')} is not a {kind}")
        module.add_class(schema.body["name"], kind, _HEADERS[kind], schema.body["fields"])
    return module.source(_module_docstring(request, response))
