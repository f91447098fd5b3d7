"""The drills' group workloads: what a drill counts for a consumer moved by a failover
(the records it re-processed, the bound the sync interval and the in-flight records put
on them, the in-flight records themselves), and the one-line error of a confluent-kafka
workload without the `confluent` extra."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mirrorsim.drills.confluent_workloads import confluent_kafka
from mirrorsim.drills.context import DrillContext
from mirrorsim.drills.workloads import ConsumerSpec, ConsumerWorkload, Seen

FAILOVER_AT = 10.0
INTERVAL = 1.0


class Ledger(ConsumerWorkload[None]):
    """The bookkeeping alone: no client."""

    async def _connect(self, cluster: str) -> None:
        return None

    async def _poll(self, client: None, cluster: str) -> None:
        return None


def moved(deliveries: list[tuple[str, str, float]], done: dict[str, float]) -> Ledger:
    """A consumer that saw ``(value, cluster, time)``, finished ``done`` and moved from
    primary to backup at the failover."""
    workload = Ledger(DrillContext(work_dir=Path()), ConsumerSpec("c", "primary", ("orders",), "g"))
    workload.seen = [
        Seen(v, cluster, "orders", 0, i, t) for i, (v, cluster, t) in enumerate(deliveries)
    ]
    workload.done_at = dict(done)
    workload.move("backup")
    workload.moved_at = FAILOVER_AT
    return workload


def test_records_delivered_again_after_the_move_are_reprocessed() -> None:
    workload = moved(
        [
            ("a", "primary", 5.0),
            ("b", "primary", 9.5),
            ("b", "backup", 11.0),
            ("c", "backup", 11.0),
        ],
        {"a": 5.1, "b": 9.6},
    )
    assert workload.reprocessed() == 1
    assert workload.duplicates() == 1


def test_the_bound_counts_what_was_done_in_the_last_two_intervals_or_never() -> None:
    workload = moved(
        [("old", "primary", 1.0), ("recent", "primary", 8.5), ("held", "primary", 9.9)],
        {"old": 1.1, "recent": 8.6},
    )
    assert workload.reprocess_bound(FAILOVER_AT, INTERVAL) == 2
    assert workload.in_flight() == 1


def test_the_bound_starts_from_the_last_commit_when_the_source_died_first() -> None:
    """The source died at 4: the last sync that read it started before then."""
    workload = moved(
        [("early", "primary", 1.0), ("late", "primary", 3.0), ("last", "primary", 3.9)],
        {"early": 1.1, "late": 3.1, "last": 4.0},
    )
    assert workload.reprocess_bound(FAILOVER_AT, INTERVAL) == 2


def test_a_consumer_that_never_moved_has_no_counts() -> None:
    workload = moved([], {})
    workload.moved_at = None
    assert (workload.reprocessed(), workload.reprocess_bound(0, 1), workload.in_flight()) == (
        None,
        None,
        None,
    )


def test_without_confluent_kafka_a_step_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "confluent_kafka", None)
    with pytest.raises(RuntimeError, match=r"pip install 'mirrorsim\[confluent\]'"):
        confluent_kafka()
