"""Topic config writes apply to the stored overrides, not to a broker's snapshot of them.

Every broker serves config and mirror APIs from its own metadata snapshot, refreshed
periodically. A write computed from that snapshot and stored whole undid whatever another
broker had stored since: seed 5, schedule 984 of the explorer set ``retention.ms`` through
one broker and deleted the mirror through another, whose snapshot predated the change,
and ``retention.ms`` went back to its default."""

from __future__ import annotations

from pathlib import Path

import pytest

from mirrorsim.broker.config import MIRROR_NAME, MIRROR_STOP_REASON
from mirrorsim.broker.metadata.alter_ops import AlterConfigOp, AlterConfigOpType
from mirrorsim.broker.metadata.controller import MetadataController
from mirrorsim.broker.metadata.store import MetadataStore
from mirrorsim.coordinator.lifecycle import _retagged, _tagged, _untagged
from mirrorsim.protocol.errors import ErrorCode, KafkaError

TOPIC = "orders"


class Broker:
    """One broker's controller over the shared store, with a snapshot it refreshes only
    when told to (or after its own writes, as a broker does)."""

    def __init__(self, store: MetadataStore, broker_id: int) -> None:
        self.store = store
        self.snapshot = store.snapshot()
        self.controller = MetadataController(
            store,
            broker_id=broker_id,
            static_configs={},
            snapshot=lambda: self.snapshot,
            live_broker_ids=lambda: [1, 2],
            on_change=self.refresh,
        )

    async def refresh(self) -> None:
        self.snapshot = self.store.snapshot()


@pytest.fixture
async def brokers(tmp_path: Path) -> tuple[Broker, Broker]:
    store = MetadataStore.open(f"sqlite:///{tmp_path / 'metadata.db'}")
    first = Broker(store, 1)
    await first.controller.create_topic(TOPIC, num_partitions=1, replication_factor=1)
    second = Broker(store, 2)
    return first, second


def stored(broker: Broker) -> dict[str, str]:
    return dict(broker.store.topics([TOPIC])[TOPIC].configs)


def set_op(name: str, value: str) -> AlterConfigOp:
    return AlterConfigOp(name, AlterConfigOpType.SET, value)


async def test_an_alter_through_a_broker_with_an_old_snapshot_keeps_the_newer_change(
    brokers: tuple[Broker, Broker],
) -> None:
    first, second = brokers
    await first.controller.alter_topic_configs(TOPIC, [set_op("retention.ms", "3600000")])
    await second.controller.alter_topic_configs(TOPIC, [set_op("segment.ms", "60000")])
    assert stored(first) == {"retention.ms": "3600000", "segment.ms": "60000"}


async def test_an_invalid_alter_stores_nothing(brokers: tuple[Broker, Broker]) -> None:
    first, _ = brokers
    with pytest.raises(KafkaError) as refused:
        await first.controller.alter_topic_configs(TOPIC, [set_op("retention.ms", "a week")])
    assert refused.value.code == ErrorCode.INVALID_CONFIG
    assert stored(first) == {}


async def test_deleting_a_mirror_through_a_broker_with_an_old_snapshot_keeps_the_operators_configs(
    brokers: tuple[Broker, Broker],
) -> None:
    """Schedule 984's last steps: the failed-over topic (``.removed``) gets ``retention.ms``
    through one broker; the mirror is deleted through the other."""
    first, second = brokers
    await first.controller.set_topic_configs(TOPIC, {MIRROR_NAME: "m.removed"})
    await second.refresh()
    await first.controller.alter_topic_configs(TOPIC, [set_op("retention.ms", "3600000")])
    await second.controller.update_topic_configs(TOPIC, lambda c: _untagged(c, "m"))
    assert stored(first) == {"retention.ms": "3600000"}


async def test_mirror_tags_change_only_the_tag_and_what_the_source_copies(
    brokers: tuple[Broker, Broker],
) -> None:
    first, second = brokers
    await first.controller.alter_topic_configs(TOPIC, [set_op("retention.ms", "3600000")])
    tagged = {MIRROR_STOP_REASON: "SOURCE_TOPIC_DELETED", "retention.ms": "3600000"}
    await first.controller.set_topic_configs(TOPIC, tagged)
    await second.controller.update_topic_configs(
        TOPIC, lambda c: _tagged(c, copied={"cleanup.policy": "compact"}, mirror="m")
    )
    assert stored(first) == {
        "retention.ms": "3600000",
        "cleanup.policy": "compact",
        MIRROR_NAME: "m",
    }
    await second.controller.update_topic_configs(
        TOPIC, lambda c: _retagged(c, mirror="m", new_value=lambda m, _intent: f"{m}.removed")
    )
    assert stored(first)[MIRROR_NAME] == "m.removed"
    with pytest.raises(KafkaError) as elsewhere:
        await second.controller.update_topic_configs(
            TOPIC, lambda c: _retagged(c, mirror="other", new_value=lambda m, _i: m)
        )
    assert elsewhere.value.code == ErrorCode.TOPIC_NOT_IN_MIRROR
