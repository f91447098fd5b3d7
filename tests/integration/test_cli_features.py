"""``mirrorsim features`` against a real broker: describe, disable, enable, refusals."""

from __future__ import annotations

import asyncio
from typing import Any

from click.testing import CliRunner, Result

from mirrorsim.cli.main import cli
from mirrorsim.protocol.features import MIRROR_VERSION


async def invoke(*args: str) -> Result:
    return await asyncio.to_thread(CliRunner().invoke, cli, list(args))


def describe_line(level: int, epoch: int) -> str:
    return (
        f"Feature: {MIRROR_VERSION}\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\t"
        f"FinalizedVersionLevel: {level}\tEpoch: {epoch}\n"
    )


async def test_describe_disable_and_enable(start_cluster: Any) -> None:
    server = ("--bootstrap-server", (await start_cluster()).bootstrap)

    described = await invoke("features", *server, "describe")
    assert (described.exit_code, described.output) == (0, describe_line(1, 0))

    dry_run = await invoke("features", *server, "disable", "--feature", MIRROR_VERSION, "--dry-run")
    assert (dry_run.exit_code, dry_run.output) == (0, "mirror.version can be disabled.\n")

    disabled = await invoke("features", *server, "disable", "--feature", MIRROR_VERSION)
    assert (disabled.exit_code, disabled.output) == (0, "mirror.version was disabled.\n")
    assert (await invoke("features", *server, "describe")).output == describe_line(0, 1)

    enabled = await invoke("features", *server, "upgrade", "--feature", "mirror.version=1")
    assert (enabled.exit_code, enabled.output) == (0, "mirror.version was upgraded to 1.\n")
    assert (await invoke("features", *server, "describe")).output == describe_line(1, 2)


async def test_refusals_and_bad_input_are_one_line_errors(start_cluster: Any) -> None:
    server = ("--bootstrap-server", (await start_cluster()).bootstrap)

    refused = await invoke("features", *server, "upgrade", "--feature", "mirror.version=2")
    assert refused.exit_code == 1
    assert refused.stdout == (
        "Could not upgrade mirror.version to 2. Invalid update version 2 for feature "
        "mirror.version. Local controller 1 only supports versions [0-1]\n"
    )
    assert refused.stderr == "Error: 1 out of 1 operation(s) failed.\n"

    downgrade = await invoke("features", *server, "upgrade", "--feature", "mirror.version=0")
    assert downgrade.exit_code == 1
    assert "without setting the upgrade type" in downgrade.stdout

    for args, message in [
        (("upgrade",), "You must specify at least one feature to upgrade"),
        (
            ("upgrade", "--feature", MIRROR_VERSION),
            "Can't parse feature=level string mirror.version: equals sign not found.",
        ),
        (
            ("disable", "--feature", MIRROR_VERSION, "--feature", MIRROR_VERSION),
            "Feature mirror.version was specified more than once.",
        ),
    ]:
        result = await invoke("features", *server, *args)
        assert (result.exit_code, result.stderr) == (1, f"Error: {message}\n")
