"""DescribeMirrors for all mirrors shows only the mirrors the caller may describe, and
reports the caller's operations on each when asked (IncludeAuthorizedOperations)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result
from helpers.mirror_cli_security import DESTINATION, USERS, properties
from helpers.mirrors import mirror_state

from mirrorsim.cli.kafka_mirrors import main as kafka_mirrors
from mirrorsim.cli.main import cli as mirrorsim_cli
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.protocol.acl import AclOperation as Op

ALL_MIRROR_OPERATIONS = frozenset(
    {Op.CREATE, Op.DELETE, Op.ALTER, Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS}
)


async def run_cli(command: Any, argv: list[str]) -> Result:
    return await asyncio.to_thread(CliRunner().invoke, command, argv)


def sasl(user: str) -> dict[str, str]:
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": USERS[user],
    }


async def test_a_principal_granted_one_mirror_describes_that_mirror_only(
    start_cluster: Callable[..., Any], tmp_path: Path, wait_for: Any
) -> None:
    source = await start_cluster("primary")
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic("orders", 1, 1), NewTopic("audit", 1, 1)])).all()
    destination = await start_cluster("backup", configs=DESTINATION)
    bootstrap = f"127.0.0.1:{destination.brokers[0].server.endpoints()['EXTERNAL'][1]}"
    async with Admin(bootstrap=bootstrap, config=sasl("admin")) as admin:
        for mirror, topic in (("prod-dr", "orders"), ("analytics", "audit")):
            await admin.create_mirror(mirror, {"bootstrap.servers": source.bootstrap})
            (await admin.add_topics_to_mirror(mirror, [topic])).all()
    for topic in ("orders", "audit"):
        await wait_for(lambda t=topic: mirror_state(destination, t, 0) == "MIRRORING", timeout=20)
    granted = await run_cli(
        mirrorsim_cli,
        [
            "acls", "--bootstrap-server", bootstrap,
            "--command-config", str(properties(tmp_path, "admin")),
            "--add", "--cluster-mirror", "prod-dr", "--operation", "Describe",
            "--allow-principal", "User:monitor",
        ],
    )  # fmt: skip
    assert granted.exit_code == 0, granted.output

    described = await run_cli(
        kafka_mirrors,
        [
            "--bootstrap-server", bootstrap,
            "--command-config", str(properties(tmp_path, "monitor")),
            "--describe",
        ],
    )  # fmt: skip
    assert described.exit_code == 0, described.stderr
    lines = described.output.splitlines()
    assert lines[0].split() == [
        "MIRROR", "TOPIC", "PARTITION", "SOURCE-OFFSET", "DESTINATION-OFFSET", "LAG", "STATE"
    ]  # fmt: skip
    assert [line.split()[:3] for line in lines[1:]] == [["prod-dr", "orders", "0"]]
    assert "analytics" not in described.output + described.stderr

    async with Admin(bootstrap=bootstrap, config=sasl("monitor")) as admin:
        seen = await admin.describe_mirrors(include_authorized_operations=True)
        assert list(seen) == ["prod-dr"]
        assert seen["prod-dr"].authorized_operations == {Op.DESCRIBE}
        assert (await admin.describe_mirrors())["prod-dr"].authorized_operations is None
    async with Admin(bootstrap=bootstrap, config=sasl("admin")) as admin:
        seen = await admin.describe_mirrors(include_authorized_operations=True)
        assert list(seen) == ["analytics", "prod-dr"]
        assert all(m.authorized_operations == ALL_MIRROR_OPERATIONS for m in seen.values())
