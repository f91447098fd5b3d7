"""``mirrorsim groups``: describe shows each partition's committed offset, log end and lag;
``--reset-offsets`` prints the plan, commits it only with ``--execute``, and refuses a group
that has active members, as kafka-consumer-groups.sh does."""

from __future__ import annotations

import asyncio
from typing import Any

from aiokafka import AIOKafkaConsumer
from click.testing import CliRunner, Result
from helpers.mirrors import produce

from mirrorsim.cli.main import cli
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic, TopicPartition

TOPIC = "orders"
GROUP = "billing"
RECORDS = 10


async def groups_cli(bootstrap: str, *args: str) -> Result:
    argv = ["groups", "--bootstrap-server", bootstrap, *args]
    return await asyncio.to_thread(CliRunner().invoke, cli, argv)


def body(result: Result) -> list[list[str]]:
    """The rows of a one-table output, split into cells, without the header."""
    return [line.split() for line in result.stdout.strip().splitlines()[1:]]


async def committed(bootstrap: str) -> dict[int, int]:
    async with Admin(bootstrap=bootstrap) as admin:
        offsets = await admin.list_consumer_group_offsets(GROUP)
    return {tp.partition: om.offset for tp, om in offsets.items()}


async def _setup(bootstrap: str) -> None:
    async with Admin(bootstrap=bootstrap) as admin:
        (await admin.create_topics([NewTopic(TOPIC, 2)])).all()
    await produce(bootstrap, TOPIC, RECORDS, partitions=2)
    async with Admin(bootstrap=bootstrap) as admin:
        (await admin.alter_consumer_group_offsets(GROUP, {TopicPartition(TOPIC, 0): 2})).all()


async def test_describe_offsets_shows_lag(start_cluster: Any) -> None:
    cluster = await start_cluster()
    await _setup(cluster.bootstrap)
    result = await groups_cli(cluster.bootstrap, "--describe", "--group", GROUP, "--offsets")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].split() == [
        "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID"
    ]  # fmt: skip
    assert body(result) == [[GROUP, TOPIC, "0", "2", "5", "3", "-"]]
    both = await groups_cli(cluster.bootstrap, "--describe", "--group", GROUP)
    assert both.exit_code == 0, both.output
    assert len(both.stdout.strip().split("\n\n")) == 3


async def test_a_reset_is_planned_then_executed(start_cluster: Any) -> None:
    cluster = await start_cluster()
    await _setup(cluster.bootstrap)
    dry = await groups_cli(
        cluster.bootstrap, "--reset-offsets", "--group", GROUP, "--topic", TOPIC, "--to-earliest"
    )
    assert dry.exit_code == 0, dry.output
    assert "--execute option is missing" in dry.stderr
    assert body(dry) == [[GROUP, TOPIC, "0", "0"], [GROUP, TOPIC, "1", "0"]]
    assert await committed(cluster.bootstrap) == {0: 2}

    shifted = await groups_cli(
        cluster.bootstrap, "--reset-offsets", "--group", GROUP, "--all-topics",
        "--shift-by", "10", "--execute",
    )  # fmt: skip
    assert shifted.exit_code == 0, shifted.output
    assert body(shifted) == [[GROUP, TOPIC, "0", "5"]]
    assert await committed(cluster.bootstrap) == {0: 5}

    chosen = await groups_cli(
        cluster.bootstrap, "--reset-offsets", "--group", GROUP, "--topic", f"{TOPIC}:1",
        "--to-offset", "1", "--execute",
    )  # fmt: skip
    assert chosen.exit_code == 0, chosen.output
    assert await committed(cluster.bootstrap) == {0: 5, 1: 1}

    dated = await groups_cli(
        cluster.bootstrap, "--reset-offsets", "--group", GROUP, "--all-topics",
        "--to-datetime", "2000-01-01T00:00:00", "--dry-run",
    )  # fmt: skip
    assert dated.exit_code == 0, dated.output
    assert dated.stderr == ""
    assert body(dated) == [[GROUP, TOPIC, "0", "0"], [GROUP, TOPIC, "1", "0"]]


async def test_a_group_with_members_is_not_reset(start_cluster: Any, wait_for: Any) -> None:
    cluster = await start_cluster()
    await _setup(cluster.bootstrap)
    consumer = AIOKafkaConsumer(
        TOPIC, bootstrap_servers=cluster.bootstrap, group_id=GROUP, enable_auto_commit=False
    )
    await consumer.start()
    try:
        await wait_for(lambda: consumer.assignment(), timeout=30, message="the member assigned")
        refused = await groups_cli(
            cluster.bootstrap, "--reset-offsets", "--group", GROUP, "--all-topics",
            "--to-latest", "--execute",
        )  # fmt: skip
        described = await groups_cli(cluster.bootstrap, "--describe", "--group", GROUP, "--offsets")
    finally:
        await consumer.stop()
    assert refused.exit_code == 1
    assert refused.stderr.strip() == (
        f"Error: Assignments can only be reset if the group '{GROUP}' is inactive, "
        "but the current state is Stable."
    )
    assert await committed(cluster.bootstrap) == {0: 2}
    owners = {row[2]: row[-1] for row in body(described)}
    assert set(owners) == {"0", "1"} and "-" not in owners.values()


async def test_bad_reset_arguments_are_one_line_errors(start_cluster: Any) -> None:
    cluster = await start_cluster()
    await _setup(cluster.bootstrap)
    cases = {
        ("--to-earliest",): "needs exactly one of --topic, --all-topics",
        ("--all-topics",): "needs exactly one of --to-earliest",
        ("--all-topics", "--to-earliest", "--to-latest"): "needs exactly one of --to-earliest",
        ("--all-topics", "--to-datetime", "soon"): "Error parsing timestamp 'soon'",
        ("--topic", "nope", "--to-earliest"): "Topic 'nope' does not exist.",
        ("--topic", f"{TOPIC}:7", "--to-earliest"): f"Partition {TOPIC}-7 does not exist.",
        ("--topic", f"{TOPIC}:x", "--to-earliest"): "partitions must be integers",
    }
    for args, message in cases.items():
        result = await groups_cli(cluster.bootstrap, "--reset-offsets", "--group", GROUP, *args)
        assert result.exit_code == 1, (args, result.output)
        assert message in result.stderr, (args, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
