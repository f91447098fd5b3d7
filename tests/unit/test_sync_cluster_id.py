"""The source cluster id guard of a mirror's sync cycle."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.coordinator.sync import ClusterIdCheck, check_source_cluster_id

IDS = st.text(min_size=1, max_size=22)


def test_first_cycle_records_the_id() -> None:
    check = check_source_cluster_id(None, "lBq12jYZRp-9wF3M9MPopg")
    assert check is ClusterIdCheck.FIRST_SEEN
    assert not check.halts_sync


def test_same_id_is_ok() -> None:
    check = check_source_cluster_id("lBq12jYZRp-9wF3M9MPopg", "lBq12jYZRp-9wF3M9MPopg")
    assert check is ClusterIdCheck.OK
    assert not check.halts_sync


def test_another_id_halts_sync() -> None:
    check = check_source_cluster_id("lBq12jYZRp-9wF3M9MPopg", "zzz")
    assert check is ClusterIdCheck.MISMATCH
    assert check.halts_sync


def test_a_source_without_cluster_id_halts_sync() -> None:
    assert check_source_cluster_id(None, None).halts_sync
    assert check_source_cluster_id("abc", None).halts_sync


@given(IDS, IDS)
def test_only_an_equal_id_passes(expected: str, observed: str) -> None:
    check = check_source_cluster_id(expected, observed)
    assert check.halts_sync is (expected != observed)
