"""``mirrorsim share-groups`` against an in-process broker, with share state made by
confluent-kafka's ``ShareConsumer``: list and describe (state, members with their
assignments, start offsets and lag), a reset planned then executed and read again by the
next member, resets and deletions refused while the group has a member, offsets and groups
deleted, and bad input as one-line errors."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from click.testing import CliRunner, Result
from helpers.mirrors import produce
from helpers.share_consumers import SHARE_CONFIGS, ShareReader, read_from_earliest

from mirrorsim.cli.main import cli
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic, TopicPartition

TOPIC, GROUP = "orders", "billing"
PARTITIONS, RECORDS = 2, 10
TIMEOUT_S = 60.0


@pytest.fixture
async def readers() -> AsyncIterator[list[ShareReader]]:
    started: list[ShareReader] = []
    yield started
    for reader in started:
        await asyncio.to_thread(reader.close)


@pytest.fixture
async def bootstrap(start_cluster: Any) -> str:
    """A cluster with a topic of ``RECORDS`` records that the group reads from the start."""
    cluster = await start_cluster(configs=SHARE_CONFIGS)
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        (await admin.create_topics([NewTopic(TOPIC, PARTITIONS)])).all()
    await read_from_earliest(cluster.bootstrap, GROUP)
    await produce(cluster.bootstrap, TOPIC, RECORDS, partitions=PARTITIONS)
    bootstrap: str = cluster.bootstrap
    return bootstrap


async def share_groups(bootstrap: str, *args: str) -> Result:
    argv = ["share-groups", "--bootstrap-server", bootstrap, *args]
    return await asyncio.to_thread(CliRunner().invoke, cli, argv)


def rows(text: str) -> list[list[str]]:
    """The rows of one table, split into cells, without the header."""
    return [line.split() for line in text.strip().splitlines()[1:]]


async def member(bootstrap: str, wait_for: Any, readers: list[ShareReader]) -> ShareReader:
    """A member that has read every record (its acknowledgements not sent yet)."""
    reader = ShareReader(bootstrap, GROUP, TOPIC, name="cli-reader")
    readers.append(reader)
    await wait_for(lambda: len(reader.seen()) >= RECORDS, timeout=TIMEOUT_S, message="all read")
    return reader


async def leave(reader: ShareReader, readers: list[ShareReader]) -> set[tuple[int, int]]:
    await asyncio.to_thread(reader.close)
    readers.remove(reader)
    return set(reader.seen())


def everything() -> set[tuple[int, int]]:
    return {(p, o) for p in range(PARTITIONS) for o in range(RECORDS // PARTITIONS)}


async def test_list_and_describe_show_members_start_offsets_and_lag(
    bootstrap: str, wait_for: Any, readers: list[ShareReader]
) -> None:
    reader = await member(bootstrap, wait_for, readers)
    listed = await share_groups(bootstrap, "--list")
    assert (listed.exit_code, listed.stdout) == (0, f"{GROUP}\n")
    described = await share_groups(bootstrap, "--describe", "--group", GROUP, "--members")
    assert described.exit_code == 0, described.output
    assert described.stdout.splitlines()[0].split() == [
        "GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"
    ]  # fmt: skip
    ((group, _member_id, _host, client_id, count, assignment),) = rows(described.stdout)
    assert (group, client_id, count, assignment) == (GROUP, "cli-reader", "2", f"{TOPIC}:0,1")

    await leave(reader, readers)
    await produce(bootstrap, TOPIC, 4, partitions=PARTITIONS)
    offsets = await share_groups(bootstrap, "--describe", "--group", GROUP, "--offsets")
    assert offsets.exit_code == 0, offsets.output
    assert offsets.stdout.splitlines()[0].split() == [
        "GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"
    ]  # fmt: skip
    assert rows(offsets.stdout) == [[GROUP, TOPIC, "0", "5", "2"], [GROUP, TOPIC, "1", "5", "2"]]

    whole = await share_groups(bootstrap, "--describe", "--group", GROUP, "--verbose")
    assert whole.exit_code == 0, whole.output
    state, members, offsets_part = whole.stdout.strip().split("\n\n")
    assert state.splitlines()[0].split() == [
        "GROUP", "COORDINATOR", "(ID)", "STATE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH", "#MEMBERS"
    ]  # fmt: skip
    ((group, coordinator, node, *rest),) = rows(state)
    assert (group, node, rest) == (GROUP, "(1)", ["Empty", "2", "2", "0"])
    assert coordinator == bootstrap
    assert members == f"Share group '{GROUP}' has no active members."
    assert rows(offsets_part)[0] == [GROUP, TOPIC, "0", "-", "5", "2"]
    with_state = await share_groups(bootstrap, "--list", "--state")
    assert rows(with_state.stdout) == [[GROUP, "Empty"]]


async def test_a_reset_is_planned_executed_and_read_again(
    bootstrap: str, wait_for: Any, readers: list[ShareReader]
) -> None:
    await leave(await member(bootstrap, wait_for, readers), readers)
    dry = await share_groups(
        bootstrap, "--reset-offsets", "--group", GROUP, "--all-topics", "--to-earliest"
    )
    assert dry.exit_code == 0, dry.output
    assert "--execute option is missing" in dry.stderr
    assert rows(dry.stdout) == [[GROUP, TOPIC, "0", "0"], [GROUP, TOPIC, "1", "0"]]

    clamped = await share_groups(
        bootstrap, "--reset-offsets", "--group", GROUP, "--topic", f"{TOPIC}:1",
        "--to-offset", "99", "--dry-run",
    )  # fmt: skip
    assert (clamped.exit_code, clamped.stderr) == (0, "")
    assert rows(clamped.stdout) == [[GROUP, TOPIC, "1", "5"]]

    executed = await share_groups(
        bootstrap, "--reset-offsets", "--group", GROUP, "--topic", TOPIC, "--to-earliest",
        "--execute",
    )  # fmt: skip
    assert executed.exit_code == 0, executed.output
    async with Admin(bootstrap=bootstrap) as admin:
        offsets = await admin.list_share_group_offsets(GROUP)
    assert {tp: info.start_offset for tp, info in offsets.items()} == {
        TopicPartition(TOPIC, 0): 0,
        TopicPartition(TOPIC, 1): 0,
    }
    assert await leave(await member(bootstrap, wait_for, readers), readers) == everything()


async def test_a_group_with_a_member_is_neither_reset_nor_deleted(
    bootstrap: str, wait_for: Any, readers: list[ShareReader]
) -> None:
    await member(bootstrap, wait_for, readers)
    reset = ("--reset-offsets", "--group", GROUP, "--all-topics", "--to-earliest", "--execute")
    refused = {
        "reset": await share_groups(bootstrap, *reset),
        "delete offsets": await share_groups(
            bootstrap, "--delete-offsets", "--group", GROUP, "--topic", TOPIC
        ),
        "delete": await share_groups(bootstrap, "--delete", "--group", GROUP),
    }
    assert {name: (r.exit_code, r.stderr) for name, r in refused.items()} == {
        "reset": (1, f"Error: Share group '{GROUP}' is not empty.\n"),
        "delete offsets": (1, "Error: NON_EMPTY_GROUP: The group is not empty\n"),
        "delete": (1, f"Error: Share group '{GROUP}' is not EMPTY.\n"),
    }


async def test_offsets_and_then_the_group_are_deleted(
    bootstrap: str, wait_for: Any, readers: list[ShareReader]
) -> None:
    await leave(await member(bootstrap, wait_for, readers), readers)
    deleted = await share_groups(
        bootstrap, "--delete-offsets", "--group", GROUP, "--topic", TOPIC, "--topic", "missing"
    )
    assert deleted.exit_code == 0, deleted.output
    assert deleted.stdout.splitlines() == [
        "TOPIC   STATUS",
        "missing Error: This server does not host this topic-partition.",
        "orders  Successful",
    ]
    none_left = await share_groups(bootstrap, "--describe", "--group", GROUP, "--offsets")
    assert none_left.stdout == f"Share group '{GROUP}' has no offset information.\n"
    assert await leave(await member(bootstrap, wait_for, readers), readers) == everything()

    gone = await share_groups(bootstrap, "--delete", "--group", GROUP)
    assert (gone.exit_code, gone.stdout) == (
        0,
        f"Deletion of requested share groups ('{GROUP}') was successful.\n",
    )
    assert (await share_groups(bootstrap, "--list")).stdout == ""


async def test_bad_input_is_a_one_line_error(bootstrap: str) -> None:
    async with Admin(bootstrap=bootstrap) as admin:
        (await admin.alter_consumer_group_offsets("classic", {TopicPartition(TOPIC, 0): 1})).all()
    reset = ("--reset-offsets", "--group", GROUP)
    cases = {
        (): "Command must include exactly one action: --list, --describe, --delete, "
        "--reset-offsets, --delete-offsets.",
        ("--list", "--delete"): "Command must include exactly one action",
        ("--describe",): "--describe requires --group",
        ("--describe", "--group", "nope"): "Share group 'nope' does not exist.",
        ("--describe", "--group", "classic"): "Group 'classic' is not a share group.",
        ("--describe", "--group", GROUP, "--state", "--members"): "Choose at most one of",
        ("--delete", "--group", "classic"): "Group 'classic' is not a share group.",
        ("--delete", "--group", "nope"): "Group 'nope' is not a share group.",
        ("--delete-offsets", "--group", GROUP): "--delete-offsets requires at least one --topic",
        (*reset, "--to-earliest"): "needs exactly one of --topic, --all-topics",
        (*reset, "--all-topics"): "needs exactly one of --to-earliest",
        (*reset, "--all-topics", "--to-earliest", "--to-offset", "1"): "needs exactly one of",
        (*reset, "--topic", "nope", "--to-earliest"): "Topic 'nope' does not exist.",
        (*reset, "--topic", f"{TOPIC}:7", "--to-earliest"): f"Partition {TOPIC}-7 does not exist.",
        (*reset, "--topic", f"{TOPIC}:x", "--to-earliest"): "partitions must be integers",
        (
            *reset,
            "--all-topics",
            "--to-earliest",
        ): f"Share group '{GROUP}' has no offsets to reset.",
        (*reset, "--all-topics", "--to-datetime", "soon"): "Error parsing timestamp 'soon'",
        (*reset, "--all-topics", "--to-earliest", "--dry-run", "--execute"): "Choose one of",
        (*reset, "--to-offset", "x"): "'x' is not a valid integer",
    }
    for args, message in cases.items():
        result = await share_groups(bootstrap, *args)
        assert result.exit_code == 1, (args, result.output)
        assert message in result.stderr, (args, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
