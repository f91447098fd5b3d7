"""``mirrorsim topics`` against a real two-broker cluster: kafka-topics.sh's output lines
for create, list, describe (leaders and ISR), alter and delete, and one-line errors."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from click.testing import CliRunner, Result

from mirrorsim.cli.main import cli


async def topics(bootstrap: str, *args: str) -> Result:
    argv = ["topics", "--bootstrap-server", bootstrap, *args]
    return await asyncio.to_thread(CliRunner().invoke, cli, argv)


async def test_create_list_describe_alter_delete(start_cluster: Any, wait_for: Any) -> None:
    cluster = await start_cluster(brokers=2)
    bootstrap = cluster.bootstrap

    created = await topics(
        bootstrap,
        "--create",
        "--topic",
        "orders",
        "--partitions",
        "2",
        "--replication-factor",
        "2",
        "--config",
        "retention.ms=60000",
    )
    assert (created.exit_code, created.stdout) == (0, "Created topic orders.\n")
    assert (await topics(bootstrap, "--create", "--topic", "clicks")).exit_code == 0

    async def listed() -> bool:
        result = await topics(bootstrap, "--list", "--exclude-internal")
        return result.stdout.splitlines() == ["clicks", "orders"]

    await wait_for(listed, message="both topics listed")
    await wait_for(
        lambda: all({"orders", "clicks"} <= set(b.snapshot.topics) for b in cluster.brokers),
        message="both topics known to every broker",
    )

    described = await topics(bootstrap, "--describe", "--topic", "ord.*")
    lines = described.stdout.splitlines()
    assert re.fullmatch(
        r"Topic: orders\tTopicId: [\w-]{22}\tPartitionCount: 2\tReplicationFactor: 2\t"
        r"Configs: retention.ms=60000",
        lines[0],
    )
    for index, line in enumerate(lines[1:]):
        fields = dict(f.split(": ") for f in line.strip("\t").split("\t"))
        assert fields["Topic"] == "orders" and fields["Partition"] == str(index)
        assert fields["Leader"] in {"1", "2"}
        assert sorted(fields["Replicas"].split(",")) == ["1", "2"]
        assert fields["Leader"] in fields["Isr"].split(",")
    assert len(lines) == 3

    altered = await topics(bootstrap, "--alter", "--topic", "orders", "--partitions", "4")
    assert (altered.exit_code, altered.stdout) == (0, "")

    async def grown() -> bool:
        described = await topics(bootstrap, "--describe", "--topic", "orders")
        return "PartitionCount: 4" in described.stdout.partition("\n")[0]

    await wait_for(grown, message="orders described with 4 partitions")

    deleted = await topics(bootstrap, "--delete", "--topic", "clicks")
    assert deleted.exit_code == 0, (deleted.stdout, deleted.stderr)

    async def gone() -> bool:
        listed = (await topics(bootstrap, "--list")).stdout.splitlines()
        return listed == ["__consumer_offsets", "orders"]

    await wait_for(gone, message="clicks deleted")


async def test_errors_are_one_line(start_cluster: Any) -> None:
    cluster = await start_cluster()
    bootstrap = cluster.bootstrap
    assert (await topics(bootstrap, "--create", "--topic", "orders")).exit_code == 0

    cases = [
        (("--create", "--topic", "orders"), "Error: TOPIC_ALREADY_EXISTS: "),
        (("--describe", "--topic", "nope"), "Error: Topic 'nope' does not exist as expected"),
        (("--delete", "--topic", "nope"), "Error: Topic 'nope' does not exist as expected"),
        (("--alter", "--topic", "orders"), "Error: --alter requires --partitions"),
        (("--list", "--describe"), "Error: Command must include exactly one action"),
        (("--describe", "--topic", "[bad"), "Error: --topic is not a valid regex"),
    ]
    for args, expected in cases:
        result = await topics(bootstrap, *args)
        assert result.exit_code == 1, args
        assert result.stderr.startswith(expected), (args, result.stderr)
        assert result.stderr.count("\n") == 1, (args, result.stderr)

    quiet = await topics(bootstrap, "--create", "--topic", "orders", "--if-not-exists")
    assert (quiet.exit_code, quiet.stdout) == (0, "")
    quiet = await topics(bootstrap, "--delete", "--topic", "nope", "--if-exists")
    assert (quiet.exit_code, quiet.stdout) == (0, "")
