"""The metadata store on SQLite: migrations, concurrent openers, CRUD, committed offsets."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import metadata_store_suite


@pytest.fixture
def url(tmp_path: Path) -> str:
    """A fresh database: here a SQLite file."""
    return f"sqlite:///{tmp_path / 'metadata.db'}"


# The metadata store suite, collected here against SQLite files.
store = metadata_store_suite.store
globals().update(
    {name: test for name, test in vars(metadata_store_suite).items() if name.startswith("test_")}
)
