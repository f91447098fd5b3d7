"""protocol/ stays sans-I/O: no asyncio, sockets, selectors, ssl, nor opening files.

Checked on the syntax tree of every module, and every module must import cleanly.
"""

import ast
import importlib
from pathlib import Path

import pytest

PROTOCOL_DIR = Path(__file__).resolve().parents[2] / "protocol"
BANNED_MODULES = {"asyncio", "socket", "selectors", "ssl"}
BANNED_CALLS = {"open"}
MODULE_FILES = sorted(PROTOCOL_DIR.rglob("*.py"))


def _module_name(path: Path) -> str:
    parts = path.relative_to(PROTOCOL_DIR).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(("mirrorsim", "protocol", *parts))


def _violations(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            names = []
            if called in BANNED_CALLS:
                found.append(f"line {node.lineno}: calls {called}(")
        else:
            names = []
        found += [
            f"line {node.lineno}: imports {name}"
            for name in names
            if name.split(".")[0] in BANNED_MODULES
        ]
    return found


def test_protocol_has_modules() -> None:
    assert PROTOCOL_DIR.joinpath("framing.py") in MODULE_FILES


@pytest.mark.parametrize("path", MODULE_FILES, ids=lambda p: str(p.relative_to(PROTOCOL_DIR)))
def test_module_is_sans_io(path: Path) -> None:
    assert _violations(ast.parse(path.read_text(), filename=str(path))) == []
    importlib.import_module(_module_name(path))


def test_checker_catches_io() -> None:
    sample = "import asyncio\nfrom socket import socket\nwith open('x') as f: pass\n"
    assert len(_violations(ast.parse(sample))) == 3
