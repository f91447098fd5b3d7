"""The mirror rules stay pure: no event loop, socket, file or database, and no dependency
on other layers beyond ``protocol/`` (the ACL value types, the state ids).

The rules are the metadata sync (``coordinator/sync/``) and the partition state machine
(``coordinator/state_machine.py``); the layer table puts them just above ``protocol/``
because the metadata layer and the handlers use them, which is only safe while they stay
pure.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

COORDINATOR_DIR = Path(__file__).resolve().parents[2] / "coordinator"
SYNC_FILES = sorted((COORDINATOR_DIR / "sync").glob("*.py"))
RULE_FILES = [*SYNC_FILES, COORDINATOR_DIR / "state_machine.py"]
BANNED = {"asyncio", "socket", "selectors", "ssl", "sqlalchemy", "os", "pathlib", "io"}
ALLOWED_PROJECT_IMPORTS = (
    "mirrorsim.coordinator.sync",
    "mirrorsim.coordinator.state_machine",
    "mirrorsim.protocol",
)


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


@pytest.mark.parametrize("path", RULE_FILES, ids=lambda p: str(p.relative_to(COORDINATOR_DIR)))
def test_rule_module_is_sans_io(path: Path) -> None:
    for name in imports(path):
        assert name.split(".")[0] not in BANNED and name != "open()", name
        if name.startswith("mirrorsim"):
            assert name.startswith(ALLOWED_PROJECT_IMPORTS), name
