"""The import graph points one way: a module imports its own component and lower layers only.

``LAYERS`` is the table, bottom layer first; ``docs/architecture.md`` shows it as the
diagram ``diagram()`` draws, and a test keeps the two equal. Components in one layer do not
import each other. Every import counts: top-level, inside functions and under
``TYPE_CHECKING``, because each is a dependency someone has to understand. The graph is
read from the syntax tree, so nothing is imported and the check runs on any copy of the
tree, which is how the tests below prove it catches a planted back edge.
"""

from __future__ import annotations

import ast
import functools
import shutil
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

COMPONENTS: dict[str, tuple[str, ...]] = {
    "protocol/": ("protocol",),
    "client/": ("client",),
    "broker/log/": ("broker.log",),
    "mirror rules": ("coordinator.sync", "coordinator.state_machine", "coordinator.mirror_lag"),
    "broker settings": (
        "broker.config",
        "broker.kafka_config_names",
        "broker.log_format",
        "broker.ports",
        "broker.properties_file",
        "broker.server_properties",
    ),
    "fetcher core": ("fetcher.plan", "fetcher.truncation"),
    "broker/group/": ("broker.group",),
    "broker/replica/": ("broker.replica",),
    "broker/metrics/": ("broker.metrics",),
    "broker/metadata/": ("broker.metadata",),
    "fetcher/": ("fetcher",),
    "broker/controller/": ("broker.controller",),
    "broker/txn/": ("broker.txn",),
    "broker/quotas/": ("broker.quotas",),
    "broker/share/": ("broker.share",),
    "broker/network/": ("broker.network",),
    "broker/auth/": ("broker.auth",),
    "broker/handlers/": ("broker.handlers",),
    "coordinator/": ("coordinator",),
    "broker process": ("broker",),
    "verify/": ("verify",),
    "compare/": ("compare",),
    "drills/": ("drills",),
    "bench/": ("bench",),
    "cli/": ("cli",),
}
"""Component → module prefixes under ``mirrorsim.``; the longest matching prefix wins, so a
new module directly in ``broker/`` or ``coordinator/`` starts at the top of its package."""

LAYERS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("protocol/",), "sans-I/O codecs, message builder, ACL types"),
    (("client/", "broker/log/", "mirror rules"), "connections; storage; pure mirror rules"),
    (
        ("broker settings", "fetcher core"),
        "config definitions, server.properties, logging; every fetcher's plan",
    ),
    (("broker/group/", "broker/replica/", "broker/metrics/"), "groups; replicas; metrics"),
    (("broker/metadata/", "fetcher/"), "metadata store and view; mirror fetchers"),
    (
        (
            "broker/controller/",
            "broker/txn/",
            "broker/quotas/",
            "broker/share/",
            "broker/network/",
        ),
        "controller; transactions; client quotas; share partitions; listeners",
    ),
    (("broker/auth/",), "authorizer, SCRAM, inter-broker credentials"),
    (("broker/handlers/",), "dispatcher, one module per API family"),
    (("coordinator/",), "mirror coordinator, lifecycle, sync jobs"),
    (("broker process",), "Broker wiring, cluster, process, supervisor"),
    (("verify/", "compare/"), "convergence checks; MM2-style comparison"),
    (("drills/",), "scenarios, runner, chaos explorer"),
    (("bench/", "cli/"), "benchmarks; the commands"),
)
"""Bottom layer first: each component may import only itself and components listed above it."""

NETWORKING = {"asyncio", "socket", "ssl", "selectors", "http", "urllib", "aiokafka"}
"""What storage (``broker/log/``) never imports: it is driven, and never reaches out."""


@dataclass(frozen=True, slots=True)
class Edge:
    path: Path
    line: int
    source: str
    target: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.source} imports {self.target}"


def component_of(module: str) -> str | None:
    """The component of a dotted name (``mirrorsim.x.y`` or an attribute inside it)."""
    if not module.startswith("mirrorsim."):
        return None
    name = module.removeprefix("mirrorsim.")
    best, best_length = None, -1
    for component, prefixes in COMPONENTS.items():
        for prefix in prefixes:
            matches = name == prefix or name.startswith(prefix + ".")
            if matches and len(prefix) > best_length:
                best, best_length = component, len(prefix)
    return best


def _module_name(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(("mirrorsim", *parts))


def _imported_names(module: str, is_package: bool, tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".")
                package = package if is_package else package[:-1]
                anchor = package[: len(package) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                yield node.lineno, f"{base}.{alias.name}"


def source_files(root: Path) -> list[Path]:
    """Every module of every package folder ``pyproject.toml`` installs."""
    setuptools = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {folder for folder in setuptools["package-dir"].values()}
    return sorted(path for folder in folders for path in (root / folder).rglob("*.py"))


@functools.cache
def _imports(module: str, is_package: bool, text: str) -> tuple[tuple[int, str], ...]:
    """Parsed once per file content: the planted-edge tests re-read a whole tree each."""
    return tuple(_imported_names(module, is_package, ast.parse(text)))


def imports_of(root: Path, path: Path) -> tuple[tuple[int, str], ...]:
    return _imports(_module_name(root, path), path.name == "__init__.py", path.read_text())


def edges(root: Path) -> Iterator[Edge]:
    """Every import of one component by another, with where it is."""
    for path in source_files(root):
        source = component_of(_module_name(root, path))
        for line, name in imports_of(root, path):
            target = component_of(name)
            if target is not None and target != source:
                yield Edge(path.relative_to(root), line, str(source), target)


def layer_of(component: str) -> int:
    return next(i for i, (members, _) in enumerate(LAYERS) if component in members)


def back_edges(root: Path) -> list[str]:
    """Imports of a component in the same or a higher layer: what the table forbids."""
    found = (str(e) for e in edges(root) if layer_of(e.target) >= layer_of(e.source))
    return list(dict.fromkeys(found))


def unplaced_modules(root: Path) -> list[str]:
    return [
        str(path.relative_to(root))
        for path in source_files(root)
        if component_of(_module_name(root, path)) is None
    ]


def networking_in_storage(root: Path) -> list[str]:
    found = []
    for path in sorted((root / "broker" / "log").rglob("*.py")):
        for line, name in imports_of(root, path):
            if name.split(".")[0] in NETWORKING:
                found.append(f"{path.relative_to(root)}:{line}: imports {name}")
    return found


def diagram() -> str:
    """The layers top first, as ``docs/architecture.md`` draws them."""
    rows = [("  ".join(members), role) for members, role in reversed(LAYERS)]
    width = max(len(names) for names, _ in rows) + 3
    return "\n".join(f"{names:<{width}}{role}" for names, role in rows)


def test_every_component_is_in_exactly_one_layer() -> None:
    placed = [member for members, _ in LAYERS for member in members]
    assert sorted(placed) == sorted(COMPONENTS)


def test_every_module_belongs_to_a_component() -> None:
    assert unplaced_modules(ROOT) == []


def test_no_import_points_up_or_sideways() -> None:
    assert back_edges(ROOT) == []


def test_storage_never_imports_networking() -> None:
    assert networking_in_storage(ROOT) == []


def test_architecture_doc_draws_the_enforced_layers() -> None:
    assert f"```\n{diagram()}\n```" in (ROOT / "docs" / "architecture.md").read_text()


@pytest.fixture(scope="module")
def tree_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the source folders to plant edges in; the real tree is never touched."""
    copy = tmp_path_factory.mktemp("tree")
    shutil.copyfile(ROOT / "pyproject.toml", copy / "pyproject.toml")
    for path in source_files(ROOT):
        target = copy / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return copy


def test_the_copy_has_no_back_edge(tree_copy: Path) -> None:
    assert back_edges(tree_copy) == []


PLANTED = [
    ("protocol/framing.py", "from mirrorsim.client.connection import BrokerConnection"),
    ("broker/log/partition_log.py", "import mirrorsim.broker.network.listeners"),
    ("broker/metadata/store.py", "from mirrorsim.coordinator.lifecycle import MirrorLifecycle"),
    ("broker/auth/authorizer.py", "from mirrorsim.broker.handlers.base import RequestContext"),
    ("broker/handlers/fetch.py", "from mirrorsim.coordinator.lifecycle import MirrorLifecycle"),
    ("broker/network/connection.py", "from mirrorsim.broker.handlers import dispatcher"),
    ("broker/replica/manager.py", "from mirrorsim.broker.group.state import GroupState"),
    ("coordinator/sync/topics.py", "from mirrorsim.broker.config import MIRROR_NAME"),
    ("client/connection.py", "def late():\n    from mirrorsim.broker.server import Broker"),
    ("fetcher/task.py", "if TYPE_CHECKING:\n    from mirrorsim.coordinator import lifecycle"),
]


@pytest.mark.parametrize(("file", "statement"), PLANTED, ids=[p for p, _ in PLANTED])
def test_a_planted_back_edge_is_caught(tree_copy: Path, file: str, statement: str) -> None:
    target = tree_copy / file
    original = target.read_text()
    target.write_text(f"{original}\n{statement}\n")
    try:
        found = back_edges(tree_copy)
    finally:
        target.write_text(original)
    assert len(found) == 1
    assert found[0].startswith(f"{file}:")


def test_a_relative_import_is_resolved(tree_copy: Path) -> None:
    target = tree_copy / "broker" / "log" / "segment.py"
    original = target.read_text()
    target.write_text(f"{original}\nfrom ..network import listeners\n")
    try:
        found = back_edges(tree_copy)
    finally:
        target.write_text(original)
    assert len(found) == 1
    assert found[0].endswith(": broker/log/ imports broker/network/")


def test_networking_planted_in_storage_is_caught(tree_copy: Path) -> None:
    target = tree_copy / "broker" / "log" / "segment.py"
    original = target.read_text()
    target.write_text(f"{original}\nimport socket\n")
    try:
        found = networking_in_storage(tree_copy)
    finally:
        target.write_text(original)
    assert len(found) == 1
    assert found[0].endswith(": imports socket")


def test_a_new_package_outside_every_component_is_reported(tmp_path: Path) -> None:
    (tmp_path / "quota").mkdir()
    (tmp_path / "quota" / "__init__.py").write_text("")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.setuptools]\npackage-dir = { "mirrorsim.quota" = "quota" }\n'
    )
    assert unplaced_modules(tmp_path) == ["quota/__init__.py"]
