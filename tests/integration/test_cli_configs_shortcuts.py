"""``mirrorsim configs`` as kafka-configs.sh is used: every entity of a type without
``--entity-name``, the brokers' cluster default, ``--add-config-file`` and the
``--topic``/``--broker`` shortcuts, against a real two-broker cluster."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from mirrorsim.cli.main import cli
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic


async def configs(bootstrap: str, *args: str) -> Result:
    argv = ["configs", "--bootstrap-server", bootstrap, *args]
    return await asyncio.to_thread(CliRunner().invoke, cli, argv)


async def test_shortcuts_files_defaults_and_all_entities(
    start_cluster: Any, wait_for: Any, tmp_path: Path
) -> None:
    cluster = await start_cluster(brokers=2)
    bootstrap = cluster.bootstrap
    async with Admin(bootstrap) as admin:
        (await admin.create_topics([NewTopic("orders", 1, 1), NewTopic("clicks", 1, 1)])).all()
    await wait_for(
        lambda: all("orders" in b.snapshot.topics for b in cluster.brokers),
        message="orders known to both brokers",
    )
    overrides = tmp_path / "orders.properties"
    overrides.write_text("retention.ms=1000\nsegment.ms=5000\n")

    result = await configs(
        bootstrap, "--topic", "orders", "--alter", "--add-config-file", str(overrides)
    )
    assert (result.exit_code, result.stdout) == (0, "Completed updating config for topic orders.\n")
    result = await configs(
        bootstrap, "--broker", "2", "--alter", "--add-config", "log.retention.ms=3600000"
    )
    assert (result.exit_code, result.stdout) == (0, "Completed updating config for broker 2.\n")
    result = await configs(
        bootstrap, "--entity-default", "--alter", "--add-config", "log.retention.ms=7200000"
    )
    assert (result.exit_code, result.stdout) == (
        0,
        "Completed updating default config for brokers in the cluster.\n",
    )

    result = await configs(bootstrap, "--entity-type", "topics", "--describe")
    assert result.stdout == (
        "Dynamic configs for topic clicks are:\n"
        "Dynamic configs for topic orders are:\n"
        "  retention.ms=1000 sensitive=false\n"
        "  segment.ms=5000 sensitive=false\n"
    )
    result = await configs(bootstrap, "--entity-type", "brokers", "--describe")
    lines = result.stdout.splitlines()
    assert lines[0] == "Dynamic configs for broker 1 are:"
    assert "Dynamic configs for broker 2 are:" in lines
    assert (
        "  log.retention.ms=3600000 sensitive=false"
        in lines[lines.index("Dynamic configs for broker 2 are:") :]
    )
    result = await configs(bootstrap, "--entity-default", "--describe")
    assert result.stdout.splitlines()[0] == "Default configs for brokers in the cluster are:"
    assert "  log.retention.ms=7200000 sensitive=false" in result.stdout.splitlines()


async def test_entity_errors_are_one_line(start_cluster: Any) -> None:
    bootstrap = (await start_cluster()).bootstrap
    cases = [
        (("--topic", "a", "--broker", "1", "--describe"), "Error: give exactly one entity"),
        (("--entity-type", "topics", "--alter", "--add-config", "a=1"), "Error: an entity name"),
        (("--entity-name", "x", "--describe"), "Error: --entity-name needs --entity-type"),
        (
            ("--entity-type", "topics", "--entity-default", "--describe"),
            "Error: give exactly one entity",
        ),
    ]
    for args, expected in cases:
        result = await configs(bootstrap, *args)
        assert result.exit_code == 1, args
        assert result.stderr.startswith(expected), (args, result.stderr)
        assert result.stderr.count("\n") == 1
