"""Share-partition state in the metadata store, on SQLite files (the suite is collected on
PostgreSQL by test_postgres.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import share_state_store_suite


@pytest.fixture
def url(tmp_path: Path) -> str:
    """A fresh database: here a SQLite file."""
    return f"sqlite:///{tmp_path / 'metadata.db'}"


metadata = share_state_store_suite.metadata
globals().update(
    {name: test for name, test in vars(share_state_store_suite).items() if name.startswith("test_")}
)
