"""The sync rules stay pure: no event loop, socket, file or database, and no dependency
on other layers beyond the ACL value types in `protocol/`."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SYNC_DIR = Path(__file__).resolve().parents[2] / "coordinator" / "sync"
BANNED = {"asyncio", "socket", "selectors", "ssl", "sqlalchemy", "os", "pathlib", "io"}
ALLOWED_PROJECT_IMPORTS = ("mirrorsim.coordinator.sync", "mirrorsim.protocol.acl")


def imports(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "open":
            names.append("open()")
    return names


@pytest.mark.parametrize("path", sorted(SYNC_DIR.glob("*.py")), ids=lambda p: p.name)
def test_sync_module_is_sans_io(path: Path) -> None:
    for name in imports(path):
        assert name.split(".")[0] not in BANNED and name != "open()", name
        if name.startswith("mirrorsim"):
            assert name.startswith(ALLOWED_PROJECT_IMPORTS), name
