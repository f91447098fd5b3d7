"""Every sub-package folder is listed in pyproject.toml, so a non-editable install is whole."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_folder_is_listed() -> None:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = set()
    for name, folder in setuptools["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder)
            found.add(".".join([name, *relative.parts]))
    assert found == set(setuptools["packages"])
