"""The metadata store on SQLite: migrations, concurrent openers, CRUD, committed offsets,
and a database that cannot be opened."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import metadata_store_suite
from helpers.descriptors import no_descriptors_left

from mirrorsim.broker.metadata import MetadataStore
from mirrorsim.broker.metadata.store import MetadataStoreUnavailable


@pytest.fixture
def url(tmp_path: Path) -> str:
    """A fresh database: here a SQLite file."""
    return f"sqlite:///{tmp_path / 'metadata.db'}"


# The metadata store suite, collected here against SQLite files.
store = metadata_store_suite.store
globals().update(
    {name: test for name, test in vars(metadata_store_suite).items() if name.startswith("test_")}
)


def test_a_database_out_of_descriptors_is_unavailable_then_recovers(url: str) -> None:
    """A connection that cannot be opened is an I/O failure the caller can report in one
    line and retry; the next call, with descriptors back, succeeds."""
    store = MetadataStore.open(url)
    try:
        store.engine.dispose()
        with no_descriptors_left(), pytest.raises(MetadataStoreUnavailable) as refused:
            store.ensure_cluster_id()
        assert isinstance(refused.value, OSError)
        assert str(refused.value).startswith(f"metadata store {url}: unable to open")
        assert store.ensure_cluster_id()
    finally:
        store.close()
