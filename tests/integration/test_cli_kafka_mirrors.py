"""kafka-mirrors end to end over the wire: exact output lines and error lines.

The destination is a scripted broker (the tiny broker of the client tests) answering the
mirror RPCs as the spec's examples do; the --add regex case also runs a scripted source
cluster whose topics the pattern is matched against.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from helpers.mirror_admin_answers import MIRROR_KEYS, answer_with
from helpers.tiny_broker import TinyBroker, TopicSpec

from mirrorsim.cli.kafka_mirrors import main
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.framing import Request
from mirrorsim.protocol.messages.constants import MirrorApiKey

DESCRIBE_CONFIGS = 32


@pytest.fixture
async def destination() -> AsyncIterator[TinyBroker]:
    broker = TinyBroker(1, cluster_id="dest-cluster")
    broker.topics = [TopicSpec("my-topic"), TopicSpec("foo", partitions=3), TopicSpec("bar")]
    broker.api_versions.update(MIRROR_KEYS)
    await broker.start()
    yield broker
    await broker.stop()


async def invoke(broker: TinyBroker, *args: str) -> Result:
    argv = ["--bootstrap-server", f"127.0.0.1:{broker.port}", *args]
    return await asyncio.to_thread(CliRunner().invoke, main, argv)


def per_topic(errors: dict[str, ErrorCode]) -> Any:
    def body(request: Request) -> dict[str, Any]:
        return {
            "error_code": 0,
            "mirror_name": request.body.mirror_name,
            "topics": [
                {"name": t.topic_name, "error_code": errors.get(t.topic_name, 0)}
                for t in request.body.topics
            ],
        }

    return answer_with(body)


def listing(source_port: int = 9091) -> dict[str, Any]:
    mirrors = [
        {
            "mirror_name": name,
            "source_bootstrap": f"localhost:{source_port}",
            "source_cluster_id": "lBq12jYZRp-9wF3M9MPopg",
            "topic_count": count,
        }
        for name, count in (("new-mirror", 1), ("my-mirror", 2))
    ]
    return {"error_code": 0, "mirrors": mirrors}


def describing() -> dict[str, Any]:
    def partition(index: int, source: int, destination: int) -> dict[str, Any]:
        return {
            "partition_index": index,
            "source_offset": source,
            "destination_offset": destination,
            "lag": source - destination,
            "state": "MIRRORING",
            "last_mirror_epoch": 0,
        }

    my_mirror = {
        "error_code": 0,
        "mirror_name": "my-mirror",
        "topics": [
            {
                "topic_name": "foo",
                "partitions": [partition(0, 69, 66), partition(1, 94, 84), partition(2, 94, 90)],
            },
            {"topic_name": "bar", "partitions": [partition(0, 2324, 2324)]},
        ],
    }
    new_mirror = {
        "error_code": 0,
        "mirror_name": "new-mirror",
        "topics": [
            {"topic_name": "baz", "partitions": [partition(0, 189, 189), partition(1, 859, 859)]}
        ],
    }
    return {"error_code": 0, "mirrors": [my_mirror, new_mirror]}


async def test_create_sends_the_mirror_config_file(destination: TinyBroker, tmp_path: Path) -> None:
    config = tmp_path / "mirror.properties"
    config.write_text("bootstrap.servers=localhost:9092\nsecurity.protocol=PLAINTEXT\n")
    destination.handlers[MirrorApiKey.CREATE_MIRROR] = answer_with({"error_code": 0})
    result = await invoke(
        destination, "--create", "--mirror", "my-mirror", "--mirror-config", str(config)
    )
    assert (result.exit_code, result.output) == (0, "Created mirror my-mirror\n")
    (request,) = destination.received_of(MirrorApiKey.CREATE_MIRROR)
    assert {c.name: c.value for c in request.body.config} == {
        "bootstrap.servers": "localhost:9092",
        "security.protocol": "PLAINTEXT",
    }


async def test_create_reports_an_invalid_name(destination: TinyBroker, tmp_path: Path) -> None:
    config = tmp_path / "mirror.properties"
    config.write_text("bootstrap.servers=localhost:9092\n")
    destination.handlers[MirrorApiKey.CREATE_MIRROR] = answer_with(
        {"error_code": ErrorCode.INVALID_MIRROR_NAME, "error_message": None}
    )
    result = await invoke(
        destination, "--create", "--mirror", "m.removed", "--mirror-config", str(config)
    )
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: INVALID_MIRROR_NAME: The mirror name does not meet the naming rules\n"
    )


@pytest.mark.parametrize(
    ("action", "api_key", "line"),
    [
        (
            "--add",
            MirrorApiKey.ADD_TOPICS_TO_MIRROR,
            "Added 1 topic(s) to mirror my-mirror: [my-topic]",
        ),
        (
            "--remove",
            MirrorApiKey.REMOVE_TOPICS_FROM_MIRROR,
            "Removed 1 topic(s) from mirror my-mirror: [my-topic]",
        ),
        (
            "--pause",
            MirrorApiKey.PAUSE_MIRROR_TOPICS,
            "Paused mirroring for 1 topic(s) in mirror my-mirror: [my-topic]",
        ),
        (
            "--resume",
            MirrorApiKey.RESUME_MIRROR_TOPICS,
            "Resumed mirroring for 1 topic(s) in mirror my-mirror: [my-topic]",
        ),
    ],
)
async def test_topic_actions_print_the_spec_lines(
    destination: TinyBroker, action: str, api_key: int, line: str
) -> None:
    destination.handlers[MirrorApiKey.LIST_MIRRORS] = answer_with({"error_code": 0, "mirrors": []})
    destination.handlers[api_key] = per_topic({})
    result = await invoke(destination, action, "--topic", "my-topic", "--mirror", "my-mirror")
    assert (result.exit_code, result.output) == (0, line + "\n")
    (request,) = destination.received_of(api_key)
    assert [t.topic_name for t in request.body.topics] == ["my-topic"]


@pytest.mark.parametrize(
    ("action", "api_key", "code", "line"),
    [
        (
            "--remove",
            MirrorApiKey.REMOVE_TOPICS_FROM_MIRROR,
            ErrorCode.UNKNOWN_MIRROR,
            "Error: UNKNOWN_MIRROR: The topic is not assigned to any mirror",
        ),
        (
            "--remove",
            MirrorApiKey.REMOVE_TOPICS_FROM_MIRROR,
            ErrorCode.TOPIC_NOT_IN_MIRROR,
            "Error: TOPIC_NOT_IN_MIRROR: The topic does not belong to the specified mirror",
        ),
        (
            "--pause",
            MirrorApiKey.PAUSE_MIRROR_TOPICS,
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            "Error: UNKNOWN_TOPIC_OR_PARTITION: This server does not host this topic-partition",
        ),
        (
            "--pause",
            MirrorApiKey.PAUSE_MIRROR_TOPICS,
            ErrorCode.MIRROR_TOPIC_ALREADY_PAUSED,
            "Error: MIRROR_TOPIC_ALREADY_PAUSED: The mirror topic is already paused",
        ),
        (
            "--resume",
            MirrorApiKey.RESUME_MIRROR_TOPICS,
            ErrorCode.MIRROR_TOPIC_NOT_PAUSED,
            "Error: MIRROR_TOPIC_NOT_PAUSED: The mirror topic is not paused",
        ),
        (
            "--resume",
            MirrorApiKey.RESUME_MIRROR_TOPICS,
            ErrorCode.MIRROR_TOPIC_BEING_REMOVED,
            "Error: MIRROR_TOPIC_BEING_REMOVED: The mirror topic is being removed",
        ),
        (
            "--add",
            MirrorApiKey.ADD_TOPICS_TO_MIRROR,
            ErrorCode.TOPIC_ALREADY_IN_MIRROR,
            "Error: TOPIC_ALREADY_IN_MIRROR: The topic is already assigned to a mirror",
        ),
        (
            "--add",
            MirrorApiKey.ADD_TOPICS_TO_MIRROR,
            ErrorCode.MIRROR_AUTHORIZATION_FAILED,
            "Error: MIRROR_AUTHORIZATION_FAILED: Mirror authorization failed",
        ),
    ],
)
async def test_per_topic_errors_are_one_line_with_exit_code_1(
    destination: TinyBroker, action: str, api_key: int, code: ErrorCode, line: str
) -> None:
    destination.handlers[MirrorApiKey.LIST_MIRRORS] = answer_with({"error_code": 0, "mirrors": []})
    destination.handlers[api_key] = per_topic({"my-topic": code})
    result = await invoke(destination, action, "--topic", "my-topic", "--mirror", "my-mirror")
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", line + "\n")


async def test_regex_selects_the_mirror_topics_for_pause(destination: TinyBroker) -> None:
    destination.handlers[MirrorApiKey.DESCRIBE_MIRRORS] = answer_with(describing())
    destination.handlers[MirrorApiKey.PAUSE_MIRROR_TOPICS] = per_topic({})
    result = await invoke(destination, "--pause", "--topic", "f.*|b.r", "--mirror", "my-mirror")
    assert result.output == "Paused mirroring for 2 topic(s) in mirror my-mirror: [bar, foo]\n"


async def test_a_regex_matching_nothing_is_an_error(destination: TinyBroker) -> None:
    destination.handlers[MirrorApiKey.DESCRIBE_MIRRORS] = answer_with(describing())
    result = await invoke(destination, "--resume", "--topic", "zz.*", "--mirror", "my-mirror")
    assert (result.exit_code, result.stderr) == (
        1,
        "Error: No topic of mirror my-mirror matches 'zz.*'\n",
    )


async def test_add_matches_the_regex_against_the_source_topics(destination: TinyBroker) -> None:
    source = TinyBroker(7, cluster_id="lBq12jYZRp-9wF3M9MPopg")
    source.topics = [TopicSpec("foo", partitions=3), TopicSpec("bar"), TopicSpec("other")]
    await source.start()
    try:
        destination.handlers[MirrorApiKey.LIST_MIRRORS] = answer_with(listing(source.port))
        destination.handlers[DESCRIBE_CONFIGS] = answer_with(
            {
                "results": [
                    {
                        "error_code": ErrorCode.UNSUPPORTED_VERSION,
                        "error_message": None,
                        "resource_type": 64,
                        "resource_name": "my-mirror",
                        "configs": [],
                    }
                ]
            }
        )
        destination.handlers[MirrorApiKey.ADD_TOPICS_TO_MIRROR] = per_topic({})
        result = await invoke(destination, "--add", "--topic", "foo|bar", "--mirror", "my-mirror")
    finally:
        await source.stop()
    assert (result.exit_code, result.output) == (
        0,
        "Added 2 topic(s) to mirror my-mirror: [bar, foo]\n",
    )


async def test_delete_and_its_errors(destination: TinyBroker) -> None:
    destination.handlers[MirrorApiKey.DELETE_MIRROR] = answer_with({"error_code": 0})
    result = await invoke(destination, "--delete", "--mirror", "my-mirror")
    assert (result.exit_code, result.output) == (0, "Deleted mirror my-mirror\n")
    destination.handlers[MirrorApiKey.DELETE_MIRROR] = answer_with(
        {"error_code": ErrorCode.MIRROR_NOT_EMPTY, "error_message": None}
    )
    result = await invoke(destination, "--delete", "--mirror", "my-mirror")
    assert (result.exit_code, result.stderr) == (
        1,
        "Error: MIRROR_NOT_EMPTY: The mirror still has active or non-removed topics\n",
    )


async def test_disabled_mirroring_is_reported(destination: TinyBroker) -> None:
    destination.handlers[MirrorApiKey.LIST_MIRRORS] = answer_with(
        {"error_code": ErrorCode.UNSUPPORTED_VERSION, "mirrors": []}
    )
    result = await invoke(destination, "--list")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: UNSUPPORTED_VERSION: ")


async def test_list_prints_the_spec_table(destination: TinyBroker) -> None:
    destination.handlers[MirrorApiKey.LIST_MIRRORS] = answer_with(listing(9091))
    result = await invoke(destination, "--list")
    assert result.output == (
        "MIRROR     TOPICS CLUSTER-ID             BOOTSTRAP-SERVER\n"
        "my-mirror  2      lBq12jYZRp-9wF3M9MPopg localhost:9091\n"
        "new-mirror 1      lBq12jYZRp-9wF3M9MPopg localhost:9091\n"
    )
    as_json = json.loads((await invoke(destination, "--list", "--json")).output)
    assert as_json[0] == {
        "mirror": "my-mirror",
        "topics": 2,
        "clusterId": "lBq12jYZRp-9wF3M9MPopg",
        "bootstrapServer": "localhost:9091",
    }


async def test_describe_prints_the_spec_table(destination: TinyBroker) -> None:
    destination.handlers[MirrorApiKey.DESCRIBE_MIRRORS] = answer_with(describing())
    result = await invoke(destination, "--describe")
    assert result.output == (
        "MIRROR     TOPIC PARTITION SOURCE-OFFSET DESTINATION-OFFSET LAG STATE\n"
        "my-mirror  bar   0         2324          2324               0   MIRRORING\n"
        "my-mirror  foo   0         69            66                 3   MIRRORING\n"
        "my-mirror  foo   1         94            84                 10  MIRRORING\n"
        "my-mirror  foo   2         94            90                 4   MIRRORING\n"
        "new-mirror baz   0         189           189                0   MIRRORING\n"
        "new-mirror baz   1         859           859                0   MIRRORING\n"
    )
    result = await invoke(destination, "--describe", "--mirror", "my-mirror", "--json")
    rows = json.loads(result.output)
    assert rows[1] == {
        "mirror": "my-mirror",
        "topic": "foo",
        "partition": 0,
        "sourceOffset": 69,
        "destinationOffset": 66,
        "lag": 3,
        "state": "MIRRORING",
    }
    (request,) = destination.received_of(MirrorApiKey.DESCRIBE_MIRRORS)[-1:]
    assert request.body.mirror_names == ("my-mirror",)
