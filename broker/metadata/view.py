"""A broker's in-memory picture of the metadata store, and what changed between two.

The broker refreshes a snapshot after each of its own writes and on a timer (so it sees
the writes of the other brokers sharing the store), then hands the partition-level
differences to the replica manager. The diff is a pure function of two snapshots.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from mirrorsim.broker.config import (
    BrokerConfigLayers,
    applicable_topic_configs,
    topic_configs_with_broker_defaults,
)
from mirrorsim.broker.metadata.change_counter import UNREAD
from mirrorsim.broker.metadata.features import FinalizedFeatures
from mirrorsim.broker.metadata.models import BrokerRegistration, TopicRecord
from mirrorsim.broker.replica.partition_state import PartitionState

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    brokers: dict[int, BrokerRegistration] = field(default_factory=dict)
    topics: dict[str, TopicRecord] = field(default_factory=dict)
    dynamic_default_configs: dict[str, str] = field(default_factory=dict)
    dynamic_broker_configs: dict[int, dict[str, str]] = field(default_factory=dict)
    finalized_features: FinalizedFeatures = field(default_factory=FinalizedFeatures)
    version: int = UNREAD
    """The store's change counter when the non-broker rows were read (``change_counter``)."""
    topic_versions: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    """Each topic's (topic id, version) as read with ``topics``: a refresh re-reads only
    the topics whose pair moved."""

    def live_brokers(self, now_ms: float, session_timeout_ms: int) -> list[BrokerRegistration]:
        """Brokers whose last heartbeat is within the session timeout, by id."""
        return [
            b
            for _, b in sorted(self.brokers.items())
            if now_ms - b.heartbeat_at <= session_timeout_ms
        ]

    def config_layers(self, broker_id: int, static: Mapping[str, str]) -> BrokerConfigLayers:
        return BrokerConfigLayers(
            dynamic_broker=self.dynamic_broker_configs.get(broker_id, {}),
            dynamic_default=self.dynamic_default_configs,
            static=static,
        )

    def topic_by_id(self, topic_id: object) -> TopicRecord | None:
        return next((t for t in self.topics.values() if t.topic_id == topic_id), None)


def partition_states(
    topic: TopicRecord, layers: BrokerConfigLayers | None = None, *, report: bool = False
) -> list[PartitionState]:
    """The topic's partitions with the configs they run with (broker defaults applied).
    A stored value no partition can run with is left out (its default applies) and, with
    ``report``, logged: one bad value never stops a refresh."""
    configs, rejected = applicable_topic_configs(
        topic_configs_with_broker_defaults(topic.configs, layers or BrokerConfigLayers())
    )
    for name, problem in rejected.items() if report else ():
        log.warning("topic %s: ignoring stored config %s: %s", topic.name, name, problem)
    return [
        PartitionState(
            topic=topic.name,
            partition=p.partition,
            topic_id=topic.topic_id,
            leader=p.leader,
            leader_epoch=p.leader_epoch,
            replicas=p.replicas,
            isr=p.isr,
            configs=dict(configs),
        )
        for p in topic.partitions
    ]


def partition_changes(
    old: Mapping[str, TopicRecord],
    new: Mapping[str, TopicRecord],
    *,
    old_layers: BrokerConfigLayers | None = None,
    new_layers: BrokerConfigLayers | None = None,
) -> tuple[list[PartitionState], list[tuple[str, int]]]:
    """(partition states that appeared or changed, partitions that disappeared).

    A topic deleted and re-created under the same name has a new topic id: its old
    partitions are reported removed and its new ones changed. A broker-level config
    change (``old_layers`` to ``new_layers``) changes every partition it reaches. A topic
    whose record and config layers are both unchanged is skipped whole: a partition's state
    is a function of those two, and comparing one record is far cheaper than building and
    comparing every partition's state on each refresh of a large cluster. The very same
    mapping on both sides (a refresh that found the store unchanged) is no change at all.
    """
    same_layers = old_layers == new_layers
    if same_layers and old is new:
        return [], []
    changed: list[PartitionState] = []
    removed: list[tuple[str, int]] = []
    for name, before in old.items():
        after = new.get(name)
        if after is None or after.topic_id != before.topic_id:
            removed.extend((name, p.partition) for p in before.partitions)
    for name, after in new.items():
        before = old.get(name)
        if same_layers and before == after:
            continue
        previous = (
            {s.partition: s for s in partition_states(before, old_layers)}
            if before is not None and before.topic_id == after.topic_id
            else {}
        )
        changed.extend(
            s
            for s in partition_states(after, new_layers, report=True)
            if previous.get(s.partition) != s
        )
    return changed, removed
