"""prepare_assign / write / complete_assign leaves what assign leaves, in memory and on disk."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mirrorsim.broker.log.epoch_cache import EpochEntry, LeaderEpochFileCache

CHECKPOINT = "leader-epoch-checkpoint"
history = st.lists(st.tuples(st.integers(0, 20), st.integers(0, 1000)), max_size=8)
assignment = st.tuples(st.integers(0, 25), st.integers(0, 1100))


def _cache(directory: Path, entries: list[tuple[int, int]]) -> LeaderEpochFileCache:
    cache = LeaderEpochFileCache(directory / CHECKPOINT)
    for epoch, offset in entries:
        cache.assign(epoch, offset)
    return cache


def _on_disk(directory: Path) -> list[EpochEntry]:
    return LeaderEpochFileCache.load(directory / CHECKPOINT).epoch_entries


@settings(max_examples=60, deadline=None)
@given(history, assignment)
def test_split_assign_matches_assign(
    tmp_path_factory: pytest.TempPathFactory, entries: list[tuple[int, int]], new: tuple[int, int]
) -> None:
    base = tmp_path_factory.mktemp("split")
    (base / "direct").mkdir()
    (base / "split").mkdir()
    direct = _cache(base / "direct", entries)
    split = _cache(base / "split", entries)
    direct.assign(*new)
    pending = split.prepare_assign(*new)
    if pending is not None:
        writer = threading.Thread(target=pending.write)
        writer.start()
        writer.join()
        split.complete_assign(pending)
    assert split.epoch_entries == direct.epoch_entries
    assert _on_disk(base / "split") == _on_disk(base / "direct")
    assert not split.dirty


def test_nothing_to_write_when_the_epoch_is_already_open(tmp_path: Path) -> None:
    cache = _cache(tmp_path, [(3, 10)])
    assert cache.prepare_assign(3, 12) is None


def test_prepared_assign_leaves_memory_alone_until_completed(tmp_path: Path) -> None:
    cache = _cache(tmp_path, [(3, 10)])
    pending = cache.prepare_assign(5, 20)
    assert pending is not None
    pending.write()
    assert cache.epoch_entries == [EpochEntry(3, 10)]
    cache.complete_assign(pending)
    assert cache.epoch_entries == [EpochEntry(3, 10), EpochEntry(5, 20)]
    assert _on_disk(tmp_path) == cache.epoch_entries


def test_a_truncation_written_meanwhile_is_not_lost(tmp_path: Path) -> None:
    """The checkpoint written off the loop predates a truncation flushed on the loop; the
    completion sees the cache moved and writes the truth again."""
    cache = _cache(tmp_path, [(1, 0), (3, 10), (4, 30)])
    pending = cache.prepare_assign(6, 40)
    assert pending is not None
    cache.truncate_from_end(30)
    cache.flush()
    pending.write()
    cache.complete_assign(pending)
    assert cache.epoch_entries == [EpochEntry(1, 0), EpochEntry(3, 10), EpochEntry(6, 40)]
    assert _on_disk(tmp_path) == cache.epoch_entries


def test_a_write_on_the_loop_during_the_thread_write_is_redone(tmp_path: Path) -> None:
    """Memory unchanged but the file rewritten meanwhile (a flush of an earlier pending
    truncation): which rename landed last is unknown, so completion writes again."""
    cache = _cache(tmp_path, [(1, 0), (3, 10)])
    cache.truncate_from_end(10)
    pending = cache.prepare_assign(5, 10)
    assert pending is not None
    pending.write()
    cache.flush()
    cache.complete_assign(pending)
    assert cache.epoch_entries == [EpochEntry(1, 0), EpochEntry(5, 10)]
    assert _on_disk(tmp_path) == cache.epoch_entries
