"""The test tree's layout: shared helpers live in ``tests/helpers``, files are named by subject.

A test module that imports from another test module (or from a ``conftest.py``) breaks as
soon as several test directories are collected in one run and two of them hold a module of
that name; it also hides which code is shared. Names such as ``test_broker_fixes_*.py`` or
``*_more.py`` say when a test was written, not what it tests.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
HELPERS = "helpers"
HISTORY_NAMES = (re.compile(r"test_.*fixes.*\.py"), re.compile(r".*_more\.py"))


def imported_modules(source: str) -> set[str]:
    """The top-level names of every module the source imports, at any depth."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def local_modules(root: Path) -> set[str]:
    """Modules that exist only as files in test directories (everything but the helpers)."""
    return {
        path.stem
        for path in root.rglob("*.py")
        if HELPERS not in path.relative_to(root).parts and path.stem != "__init__"
    }


def layout_problems(root: Path) -> list[str]:
    """One line per test file that imports a test module or conftest, or is named by history."""
    forbidden = local_modules(root)
    problems = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if any(pattern.fullmatch(path.name) for pattern in HISTORY_NAMES):
            problems.append(f"{relative}: named by history, not by subject")
        for module in sorted(imported_modules(path.read_text()) & forbidden):
            problems.append(f"{relative}: imports {module}; move what it shares to {HELPERS}/")
    return problems


def test_tests_import_only_helpers_and_are_named_by_subject() -> None:
    assert layout_problems(TESTS) == []


def test_an_import_from_another_test_module_is_found(tmp_path: Path) -> None:
    (tmp_path / "unit").mkdir()
    (tmp_path / "unit" / "test_codec.py").write_text("VALUE = 1\n")
    (tmp_path / "unit" / "test_user.py").write_text(
        "def test_x() -> None:\n    from test_codec import VALUE\n"
    )
    assert layout_problems(tmp_path) == [
        "unit/test_user.py: imports test_codec; move what it shares to helpers/"
    ]


def test_an_import_from_conftest_or_a_sibling_module_is_found(tmp_path: Path) -> None:
    (tmp_path / "spark").mkdir()
    (tmp_path / "spark" / "conftest.py").write_text("LIMIT = 1\n")
    (tmp_path / "spark" / "spark_logs.py").write_text("LIMIT = 2\n")
    (tmp_path / "spark" / "test_job.py").write_text(
        "import spark_logs\nfrom conftest import LIMIT\n"
    )
    assert layout_problems(tmp_path) == [
        "spark/test_job.py: imports conftest; move what it shares to helpers/",
        "spark/test_job.py: imports spark_logs; move what it shares to helpers/",
    ]


def test_an_import_from_helpers_is_allowed(tmp_path: Path) -> None:
    (tmp_path / "helpers").mkdir()
    (tmp_path / "helpers" / "codecs.py").write_text("VALUE = 1\n")
    (tmp_path / "test_user.py").write_text("from helpers.codecs import VALUE\n")
    assert layout_problems(tmp_path) == []


def test_history_names_are_found(tmp_path: Path) -> None:
    for name in ("test_broker_fixes_groups.py", "test_mirror_scenarios_more.py", "test_ok.py"):
        (tmp_path / name).write_text("")
    assert layout_problems(tmp_path) == [
        "test_broker_fixes_groups.py: named by history, not by subject",
        "test_mirror_scenarios_more.py: named by history, not by subject",
    ]
