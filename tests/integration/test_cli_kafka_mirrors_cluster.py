"""kafka-mirrors against real in-process source and destination clusters."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from mirrorsim.broker.handlers.base import HANDLERS
from mirrorsim.cli.kafka_mirrors import main
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.protocol.messages.constants import MirrorApiKey

pytestmark = pytest.mark.skipif(
    MirrorApiKey.ADD_TOPICS_TO_MIRROR not in HANDLERS,
    reason="the broker does not serve the mirror RPCs yet",
)


async def invoke(bootstrap: str, *args: str) -> Result:
    argv = ["--bootstrap-server", bootstrap, *args]
    return await asyncio.to_thread(CliRunner().invoke, main, argv)


async def test_create_add_list_and_errors(
    start_cluster: Callable[..., Any], tmp_path: Path
) -> None:
    source = await start_cluster("primary")
    destination = await start_cluster("backup")
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic("my-topic", 2, 1), NewTopic("other", 1, 1)])).all()
    config = tmp_path / "mirror.properties"
    config.write_text(f"bootstrap.servers={source.bootstrap}\n")

    result = await invoke(
        destination.bootstrap, "--create", "--mirror", "my-mirror", "--mirror-config", str(config)
    )
    assert (result.exit_code, result.output) == (0, "Created mirror my-mirror\n")

    result = await invoke(
        destination.bootstrap, "--add", "--topic", "my-.*", "--mirror", "my-mirror"
    )
    assert (result.exit_code, result.output) == (
        0,
        "Added 1 topic(s) to mirror my-mirror: [my-topic]\n",
    )

    result = await invoke(destination.bootstrap, "--list")
    assert result.output.splitlines()[0].split() == [
        "MIRROR",
        "TOPICS",
        "CLUSTER-ID",
        "BOOTSTRAP-SERVER",
    ]
    assert result.output.splitlines()[1].split() == [
        "my-mirror",
        "1",
        source.cluster_id,
        source.bootstrap,
    ]

    result = await invoke(
        destination.bootstrap, "--create", "--mirror", "new-mirror", "--mirror-config", str(config)
    )
    assert result.exit_code == 0
    result = await invoke(
        destination.bootstrap, "--add", "--topic", "my-topic", "--mirror", "new-mirror"
    )
    assert (result.exit_code, result.stderr) == (
        1,
        "Error: TOPIC_ALREADY_IN_MIRROR: Topic my-topic is already in mirror my-mirror\n",
    )

    result = await invoke(destination.bootstrap, "--delete", "--mirror", "my-mirror")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: MIRROR_NOT_EMPTY: ")
    assert result.stderr.count("\n") == 1
