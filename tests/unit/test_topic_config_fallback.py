"""A topic's partitions run with its overrides, then the broker-level settings of the
synonyms (Kafka's topic config resolution), and follow dynamic broker config changes."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.broker.config import (
    TOPIC_CONFIGS,
    BrokerConfigLayers,
    resolve_topic_config,
    topic_configs_with_broker_defaults,
)
from mirrorsim.broker.log.config import LogConfig
from mirrorsim.broker.metadata.models import PartitionAssignment, TopicRecord
from mirrorsim.broker.metadata.view import partition_changes
from mirrorsim.broker.replica.partition_state import PartitionState

SYNONYMS = {
    name: d.broker_synonym
    for name, d in TOPIC_CONFIGS.items()
    if d.broker_synonym is not None and not d.internal
}


def topic(configs: dict[str, str] | None = None, partitions: int = 2) -> TopicRecord:
    topic_id = uuid.UUID(int=7)
    return TopicRecord(
        name="orders",
        topic_id=topic_id,
        configs=configs or {},
        partitions=tuple(
            PartitionAssignment(p, (1, 2, 3), leader=1, leader_epoch=0, isr=(1, 2, 3))
            for p in range(partitions)
        ),
    )


def test_kafka_synonyms_reach_the_topic_names() -> None:
    layers = BrokerConfigLayers(
        static={
            "log.retention.ms": "1000",
            "log.segment.bytes": "4096",
            "message.max.bytes": "2048",
            "log.cleanup.policy": "compact",
            "compression.type": "zstd",
            "min.insync.replicas": "2",
            "unclean.leader.election.enable": "true",
        }
    )
    assert topic_configs_with_broker_defaults({}, layers) == {
        "retention.ms": "1000",
        "segment.bytes": "4096",
        "max.message.bytes": "2048",
        "cleanup.policy": "compact",
        "compression.type": "zstd",
        "min.insync.replicas": "2",
        "unclean.leader.election.enable": "true",
    }
    log_config = LogConfig.from_topic_config(topic_configs_with_broker_defaults({}, layers))
    assert (log_config.retention_ms, log_config.segment_bytes) == (1000, 4096)
    assert (log_config.max_message_bytes, log_config.cleanup_policy) == (2048, "compact")


def test_override_then_dynamic_broker_then_dynamic_default_then_static() -> None:
    layers = BrokerConfigLayers(
        dynamic_broker={"log.retention.ms": "1"},
        dynamic_default={"log.retention.ms": "2", "log.segment.bytes": "2000"},
        static={"log.retention.ms": "3", "log.segment.bytes": "3000", "message.max.bytes": "3"},
    )
    effective = topic_configs_with_broker_defaults({"max.message.bytes": "9"}, layers)
    assert effective == {"retention.ms": "1", "segment.bytes": "2000", "max.message.bytes": "9"}


def test_internal_overrides_are_kept() -> None:
    effective = topic_configs_with_broker_defaults(
        {"mirror.name": "dr"}, BrokerConfigLayers(static={"min.insync.replicas": "2"})
    )
    state = PartitionState("t", 0, uuid.UUID(int=1), 1, 0, (1,), (1,), effective)
    assert state.is_read_only
    assert not state.accepts_produce(mirror_partition_stopped=True)
    assert state.min_insync_replicas() == 2


layer = st.dictionaries(
    st.sampled_from(sorted(set(SYNONYMS.values()))), st.sampled_from(["1", "2", "3"])
)
overrides = st.dictionaries(st.sampled_from(sorted(SYNONYMS)), st.sampled_from(["7", "8"]))


@given(overrides=overrides, dynamic_broker=layer, dynamic_default=layer, static=layer)
def test_agrees_with_describe_configs(
    overrides: dict[str, str],
    dynamic_broker: dict[str, str],
    dynamic_default: dict[str, str],
    static: dict[str, str],
) -> None:
    """What partitions run with is what DescribeConfigs reports, except Kafka's defaults,
    which are left to the components."""
    layers = BrokerConfigLayers(dynamic_broker, dynamic_default, static)
    effective = topic_configs_with_broker_defaults(overrides, layers)
    for described in resolve_topic_config(overrides, layers):
        if described.is_default:
            assert described.name not in effective
        else:
            assert effective[described.name] == described.value


@given(overrides=overrides)
def test_without_broker_settings_the_overrides_are_all(overrides: dict[str, str]) -> None:
    assert topic_configs_with_broker_defaults(overrides, BrokerConfigLayers()) == overrides


def test_a_broker_config_change_reapplies_every_partition() -> None:
    topics = {"orders": topic()}
    before = BrokerConfigLayers(static={"min.insync.replicas": "2"})
    changed, removed = partition_changes({}, topics, new_layers=before)
    assert removed == []
    assert {s.min_insync_replicas() for s in changed} == {2}
    assert partition_changes(topics, topics, old_layers=before, new_layers=before) == ([], [])

    after = BrokerConfigLayers(
        dynamic_default={"min.insync.replicas": "1"}, static={"min.insync.replicas": "2"}
    )
    changed, removed = partition_changes(topics, topics, old_layers=before, new_layers=after)
    assert [(s.partition, s.min_insync_replicas()) for s in changed] == [(0, 1), (1, 1)]
    assert removed == []


def test_a_broker_config_change_hidden_by_an_override_changes_nothing() -> None:
    topics = {"orders": topic({"retention.ms": "5"})}
    before = BrokerConfigLayers(static={"log.retention.ms": "1"})
    after = BrokerConfigLayers(dynamic_default={"log.retention.ms": "2"})
    assert partition_changes(topics, topics, old_layers=before, new_layers=after) == ([], [])
