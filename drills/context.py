"""What one drill run knows while it runs: clusters, workloads, acknowledgements, events,
mirrors and the results the assertions and the report read.

Times are seconds since the run started (monotonic), so the timeline, RPO and RTO share
one clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mirrorsim.drills.clusters import DrillCluster

if TYPE_CHECKING:
    from mirrorsim.drills.chaos.journal import ChaosJournal
    from mirrorsim.drills.sampler import TimelineSampler
    from mirrorsim.drills.steps.mirror import AppendedBytes
    from mirrorsim.drills.workloads import ConsumerWorkload, ProducerWorkload


@dataclass(frozen=True, slots=True)
class Ack:
    """One record the cluster acknowledged (committed, for a transactional producer)."""

    workload: str
    value: str
    cluster: str
    topic: str
    partition: int
    offset: int
    time: float


@dataclass(frozen=True, slots=True)
class Event:
    time: float
    kind: str
    detail: str


@dataclass(slots=True)
class MirrorLink:
    """A mirror as the drill set it up: ``destination`` pulls ``topics`` from ``source``."""

    name: str
    destination: str
    source: str
    topics: list[str]
    appended: AppendedBytes | None = None


@dataclass
class DrillContext:
    work_dir: Path
    clusters: dict[str, DrillCluster] = field(default_factory=dict)
    producers: dict[str, ProducerWorkload] = field(default_factory=dict)
    consumers: dict[str, ConsumerWorkload[Any]] = field(default_factory=dict)
    mirrors: dict[tuple[str, str], MirrorLink] = field(default_factory=dict)
    acks: list[Ack] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    results: dict[str, Any] = field(default_factory=dict)
    txn_producers: dict[str, Any] = field(default_factory=dict)
    txn_pending: dict[str, list[Ack]] = field(default_factory=dict)
    sampler: TimelineSampler | None = None
    chaos: ChaosJournal | None = None
    on_event: Callable[[Event], None] = lambda event: None
    started: float = field(default_factory=time.monotonic)

    def now(self) -> float:
        return time.monotonic() - self.started

    def cluster(self, name: str) -> DrillCluster:
        try:
            return self.clusters[name]
        except KeyError:
            raise KeyError(f"no cluster named {name}") from None

    def mark(self, kind: str, detail: str = "") -> Event:
        event = Event(self.now(), kind, detail)
        self.events.append(event)
        self.on_event(event)
        return event

    def record(self, key: str, value: Any) -> None:
        self.results[key] = value

    def record_in(self, key: str, *path_and_value: Any) -> None:
        """``record_in("offsets", "backup", "orders-0", 5)`` sets results.offsets.backup..."""
        *path, last, value = path_and_value
        node = self.results.setdefault(key, {})
        for part in path:
            node = node.setdefault(part, {})
        node[last] = value
