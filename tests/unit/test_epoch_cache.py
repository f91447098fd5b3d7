"""LeaderEpochFileCache against Kafka's rules and a simple model."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.broker.log.epoch_cache import EpochEntry, LeaderEpochFileCache


def cache(tmp_path: Path, *entries: tuple[int, int]) -> LeaderEpochFileCache:
    c = LeaderEpochFileCache(tmp_path / "leader-epoch-checkpoint")
    for epoch, offset in entries:
        c.assign(epoch, offset)
    return c


def test_checkpoint_file_is_kafka_text_format(tmp_path: Path) -> None:
    cache(tmp_path, (0, 0), (3, 100))
    assert (tmp_path / "leader-epoch-checkpoint").read_text() == "0\n2\n0 0\n3 100\n"
    loaded = LeaderEpochFileCache.load(tmp_path / "leader-epoch-checkpoint")
    assert loaded.epoch_entries == [EpochEntry(0, 0), EpochEntry(3, 100)]


def test_assign_keeps_entries_monotonic(tmp_path: Path) -> None:
    c = cache(tmp_path, (1, 10), (1, 20), (2, 30))
    assert c.epoch_entries == [EpochEntry(1, 10), EpochEntry(2, 30)]
    c.assign(2, 25)
    assert c.epoch_entries == [EpochEntry(1, 10), EpochEntry(2, 25)]
    c.assign(3, 15)
    assert c.epoch_entries == [EpochEntry(1, 10), EpochEntry(3, 15)]


def test_end_offset_for(tmp_path: Path) -> None:
    c = cache(tmp_path, (2, 10), (4, 30), (7, 50))
    assert c.end_offset_for(7, 60) == (7, 60)
    assert c.end_offset_for(4, 60) == (4, 50)
    assert c.end_offset_for(5, 60) == (4, 50)
    assert c.end_offset_for(1, 60) == (1, 10)
    assert c.end_offset_for(8, 60) == (-1, -1)
    assert c.end_offset_for(-1, 60) == (-1, -1)
    assert cache(tmp_path / "..").end_offset_for(0, 5) == (-1, -1)


def test_truncation(tmp_path: Path) -> None:
    c = cache(tmp_path, (2, 10), (4, 30), (7, 50))
    c.truncate_from_end(30)
    assert c.epoch_entries == [EpochEntry(2, 10)]
    c = cache(tmp_path, (2, 10), (4, 30), (7, 50))
    c.truncate_from_start(35)
    assert c.epoch_entries == [EpochEntry(4, 35), EpochEntry(7, 50)]
    c.truncate_from_start(50)
    assert c.epoch_entries == [EpochEntry(7, 50)]


@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 1000)), max_size=30))
def test_entries_stay_strictly_increasing(
    tmp_path_factory: pytest.TempPathFactory, assignments: list[tuple[int, int]]
) -> None:
    directory = tmp_path_factory.mktemp("epochs")
    c = cache(directory, *assignments)
    entries = c.epoch_entries
    assert all(
        a.epoch < b.epoch and a.start_offset < b.start_offset
        for a, b in itertools.pairwise(entries)
    )
    if assignments:
        last_epoch, last_offset = assignments[-1]
        assert entries[-1].epoch == last_epoch or entries[-1].start_offset < last_offset
    reloaded = LeaderEpochFileCache.load(directory / "leader-epoch-checkpoint")
    assert reloaded.epoch_entries == entries
