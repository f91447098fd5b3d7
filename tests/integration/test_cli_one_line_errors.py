"""Every command's bad input is one ``Error:`` line on stderr and exit code 1, never a
traceback or click's usage block: the installed ``mirrorsim`` and ``kafka-mirrors``
scripts run as a user runs them, against a real in-process cluster where one is needed."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from mirrorsim.client import Admin

BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class BadInput:
    argv: tuple[str, ...]
    expected: str
    files: dict[str, str] = field(default_factory=dict)
    needs_cluster: bool = False
    existing_mirror: bool = False


def _mirror_config(line: str) -> dict[str, str]:
    return {"m.properties": f"bootstrap.servers={{source}}\n{line}\n"}


CREATE = ("kafka-mirrors", "--bootstrap-server", "{bootstrap}", "--mirror", "m1")
CASES = {
    "unknown command": BadInput(("mirrorsim", "nosuch"), "No such command 'nosuch'"),
    "unknown option": BadInput(("mirrorsim", "up", "--bogus"), "No such option '--bogus'"),
    "missing argument": BadInput(("mirrorsim", "drill", "run"), "Missing argument"),
    "compare records all trimmed": BadInput(
        ("mirrorsim", "compare", "--records", "100"), "'--records': 100 is not in the range"
    ),
    "compare translation": BadInput(
        ("mirrorsim", "compare", "--translation", "lsn"),
        "'lsn' is not one of 'offset-sync', 'timestamp'",
    ),
    "malformed drill yaml": BadInput(
        ("mirrorsim", "drill", "run", "{tmp}/bad.yaml"),
        "bad.yaml: mapping values are not allowed here at line 2",
        files={"bad.yaml": "name: x\n  steps: [\n"},
    ),
    "verify an empty dir": BadInput(
        ("mirrorsim", "verify", "--source-dir", "{tmp}", "--destination-dir", "{tmp}"),
        "no partition folders",
    ),
    "up with unreachable postgres": BadInput(
        ("mirrorsim", "up", "--config", "{tmp}/pg.toml"),
        "metadata store postgresql+psycopg://mirrorsim:***@127.0.0.1:1/mirrorsim:",
        files={
            "pg.toml": '[cluster.primary]\ndata_dir = "{tmp}/data"\n'
            'metadata_url = "postgresql+psycopg://mirrorsim:pw@127.0.0.1:1/mirrorsim"\n'
        },
    ),
    "kafka-mirrors unreachable bootstrap": BadInput(
        ("kafka-mirrors", "--bootstrap-server", "127.0.0.1:1", "--list", "--timeout", "300"),
        "no bootstrap broker reachable: 127.0.0.1:1",
    ),
    "create with a bogus security.protocol": BadInput(
        (*CREATE, "--create", "--mirror-config", "{tmp}/m.properties"),
        "INVALID_CONFIG: Invalid value BOGUS for configuration security.protocol",
        files=_mirror_config("security.protocol=BOGUS"),
        needs_cluster=True,
    ),
    "create with an unknown config name": BadInput(
        (*CREATE, "--create", "--mirror-config", "{tmp}/m.properties"),
        "INVALID_CONFIG: Unknown mirror config name: bootstrap.server",
        files=_mirror_config("bootstrap.server=typo:9092"),
        needs_cluster=True,
    ),
    "create with a bad include regex": BadInput(
        (*CREATE, "--create", "--mirror-config", "{tmp}/m.properties"),
        "INVALID_CONFIG:",
        files=_mirror_config("mirror.groups.include=[unclosed"),
        needs_cluster=True,
    ),
    "create with a malformed bootstrap.servers": BadInput(
        (*CREATE, "--create", "--mirror-config", "{tmp}/m.properties"),
        "INVALID_CONFIG: Invalid value no-port for configuration bootstrap.servers",
        files={"m.properties": "bootstrap.servers=no-port\n"},
        needs_cluster=True,
    ),
    "alter with a bogus security.protocol": BadInput(
        (*CREATE, "--alter", "--mirror-config", "{tmp}/m.properties"),
        "INVALID_CONFIG: Invalid value BOGUS for configuration security.protocol",
        files=_mirror_config("security.protocol=BOGUS"),
        needs_cluster=True,
        existing_mirror=True,
    ),
}


def _fill(text: str, values: dict[str, str]) -> str:
    for name, value in values.items():
        text = text.replace("{" + name + "}", value)
    return text


@pytest.mark.parametrize("case", CASES.values(), ids=list(CASES))
async def test_bad_input_is_one_error_line_and_exit_code_1(
    case: BadInput, tmp_path: Path, start_cluster: Any
) -> None:
    values = {"tmp": str(tmp_path)}
    if case.needs_cluster:
        source = await start_cluster("primary")
        destination = await start_cluster("backup")
        values |= {"bootstrap": destination.bootstrap, "source": source.bootstrap}
        if case.existing_mirror:
            async with Admin(destination.bootstrap) as admin:
                await admin.create_mirror("m1", {"bootstrap.servers": source.bootstrap})
    for name, text in case.files.items():
        (tmp_path / name).write_text(_fill(text, values))
    command, *args = (_fill(arg, values) for arg in case.argv)

    result = await asyncio.to_thread(
        subprocess.run,
        [str(BIN / command), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )

    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith("Error: "), result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert case.expected in result.stderr
