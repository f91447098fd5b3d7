"""The mirror RPC modules are generated from their JSON schemas, and the generator is exact.

The checked-in modules must be what ``scripts/generate_messages.py`` writes from
``protocol/schemas/``, so a schema edit without regeneration (or a hand edit of a module)
fails here. A schema the generator does not support is refused by name, never guessed.
"""

from __future__ import annotations

import io
import subprocess
import sys
import types
import uuid
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.serial import entity_writer

from mirrorsim.protocol.message_codegen import (
    SchemaError,
    generate_module,
    module_name,
    snake_case,
)
from mirrorsim.protocol.schema_reader import schema_reader

ROOT = Path(__file__).resolve().parents[2]

REQUEST = """// Sample (7): a request with every supported kind of field.
//
// Its second paragraph.
{
  "apiKey": 7, "type": "request", "name": "SampleRequest",
  "validVersions": "0", "flexibleVersions": "0+",
  "fields": [
    { "name": "MirrorName", "type": "string", "versions": "0+", "about": "The name." },
    { "name": "TopicId", "type": "uuid", "versions": "0+", "about": "An id." },
    { "name": "Indexes", "type": "[]int32", "versions": "0+", "default": "[]",
      "about": "Some partitions." },
    { "name": "Flag", "type": "bool", "versions": "0+", "default": "false", "about": "A flag." },
    { "name": "Topics", "type": "[]TopicData", "versions": "0+", "about": "Topics.", "fields": [
      { "name": "Name", "type": "string", "versions": "0+", "entityType": "topicName",
        "about": "A topic." },
      { "name": "Epoch", "type": "int32", "versions": "0+", "default": "-1", "about": "An epoch." },
      { "name": "Note", "type": "string", "versions": "0+", "nullableVersions": "0+",
        "taggedVersions": "0+", "tag": 0, "default": "null", "about": "A tagged note." }
    ]}
  ]
}
"""

RESPONSE = """{
  "apiKey": 7, "type": "response", "name": "SampleResponse",
  "validVersions": "0", "flexibleVersions": "0+",
  "fields": [
    { "name": "ThrottleTimeMs", "type": "int32", "versions": "0+", "about": "Throttle." },
    { "name": "ErrorCode", "type": "int16", "versions": "0+", "about": "The error." },
    { "name": "State", "type": "int8", "versions": "0+", "about": "A state." },
    { "name": "Offset", "type": "int64", "versions": "0+", "default": "-1", "about": "Offset." }
  ]
}
"""


def load(source: str) -> types.ModuleType:
    module = types.ModuleType("generated_sample")
    sys.modules[module.__name__] = module
    exec(compile(source, "generated_sample.py", "exec", dont_inherit=True), module.__dict__)
    return module


def test_every_checked_in_mirror_module_is_what_its_schemas_generate() -> None:
    check = subprocess.run(
        [sys.executable, "scripts/generate_messages.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    schemas = sorted((ROOT / "protocol" / "schemas").glob("*Request.json"))
    assert len(schemas) == 12
    for schema in schemas:
        assert (ROOT / "protocol" / "messages" / f"{module_name(schema.stem)}.py").exists()


def test_a_generated_module_names_its_schemas_and_keeps_the_comments() -> None:
    source = generate_module(REQUEST, RESPONSE)
    assert source.startswith('"""Sample (7): a request with every supported kind of field.\n')
    assert "Its second paragraph." in source
    assert "protocol/schemas/SampleRequest.json" in source


@given(
    mirror=st.text(max_size=20),
    topic_id=st.uuids(),
    indexes=st.lists(st.integers(-(2**31), 2**31 - 1), max_size=5),
    flag=st.booleans(),
    topics=st.lists(
        st.tuples(st.text(min_size=1, max_size=10), st.integers(-1, 2**31 - 1), st.none()),
        max_size=3,
    )
    | st.lists(
        st.tuples(st.text(min_size=1, max_size=10), st.integers(-1, 9), st.text(max_size=10)),
        max_size=3,
    ),
)
def test_a_generated_message_survives_kios_writer_and_the_projects_reader(
    mirror: str, topic_id: uuid.UUID, indexes: list[int], flag: bool, topics: list[tuple]
) -> None:
    module = load(generate_module(REQUEST, RESPONSE))
    message = module.SampleRequest(
        mirror_name=mirror,
        topic_id=topic_id,
        indexes=tuple(indexes),
        flag=flag,
        topics=tuple(module.TopicData(name=n, epoch=e, note=note) for n, e, note in topics),
    )
    buffer = io.BytesIO()
    entity_writer(module.SampleRequest)(buffer, message)
    decoded, size = schema_reader(module.SampleRequest)(memoryview(buffer.getvalue()), 0)
    assert decoded == message
    assert size == len(buffer.getvalue())


def test_defaults_timedelta_and_widths_follow_kio() -> None:
    module = load(generate_module(REQUEST, RESPONSE))
    request = module.SampleRequest(mirror_name="m", topic_id=None, topics=())
    assert (request.indexes, request.flag) == ((), False)
    topic = module.TopicData(name="t")
    assert (topic.epoch, topic.note) == (-1, None)
    fields = module.SampleResponse.__dataclass_fields__
    assert fields["throttle_time"].metadata == {"kafka_type": "timedelta_i32"}
    assert fields["state"].metadata == {"kafka_type": "int8"}
    assert fields["offset"].default == -1


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("TopicId", "topic_id"),
        ("MirrorLeaderEpoch", "mirror_leader_epoch"),
        ("IncludeAuthorizedOperations", "include_authorized_operations"),
        ("PauseMirrorTopicsRequest", "pause_mirror_topics_request"),
    ],
)
def test_snake_case_is_kios(name: str, expected: str) -> None:
    assert snake_case(name) == expected


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (('"type": "bool"', '"type": "float64"'), "float64 is not supported"),
        (('"validVersions": "0"', '"validVersions": "0-1"'), "only version 0"),
        (('"default": "null", "about": "A tagged', '"about": "A tagged'), "needs"),
        (('"[]TopicData"', '"[]SampleRequest"'), "two structs named SampleRequest"),
        (('"apiKey": 7, "type": "request"', '"apiKey": 8, "type": "request"'), "different API"),
        (('"type": "request", "name"', '"type": "response", "name"'), "is not a request"),
        (
            (
                "// Sample (7): a request with every supported kind of field.\n//\n// Its second "
                "paragraph.\n",
                "",
            ),
            "leading // comment",
        ),
    ],
)
def test_a_schema_the_generator_does_not_support_is_refused_by_name(
    change: tuple[str, str], reason: str
) -> None:
    old, new = change
    assert old in REQUEST
    with pytest.raises(SchemaError, match=reason):
        generate_module(REQUEST.replace(old, new), RESPONSE)
