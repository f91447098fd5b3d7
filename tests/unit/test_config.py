"""Broker and topic config definitions: parsing, validation, precedence and synonyms."""

from __future__ import annotations

import pytest

from mirrorsim.broker.cluster import DEFAULT_CLUSTERS_TOML, parse_cluster_specs
from mirrorsim.broker.config import (
    BROKER_CONFIGS,
    MIRROR_NAME,
    TOPIC_CONFIGS,
    BrokerConfigLayers,
    ConfigError,
    ConfigSource,
    effective_broker_config,
    normalize_static_configs,
    resolve_topic_config,
    topic_name_error,
    validate_broker_configs,
    validate_topic_configs,
)

# KIP-1279 defines these as topic configs only, with no broker-level default.
TOPIC_ONLY_CONFIGS = {
    "mirror.support.unclean.leader.election",
    "mirror.replication.throttled.replicas",
}


def test_every_topic_config_default_parses_and_has_a_broker_synonym() -> None:
    for name, topic_def in TOPIC_CONFIGS.items():
        topic_def.definition.parse(topic_def.definition.default)
        if topic_def.internal or name in TOPIC_ONLY_CONFIGS:
            assert topic_def.broker_synonym is None, name
        else:
            assert topic_def.broker_synonym in BROKER_CONFIGS, name


@pytest.mark.parametrize(
    ("configs", "fragment"),
    [
        ({"retention.ms": "abc"}, "retention.ms"),
        ({"retention.ms": "-2"}, "at least -1"),
        ({"cleanup.policy": "delete,shred"}, "one of"),
        ({"min.cleanable.dirty.ratio": "1.5"}, "[0, 1]"),
        ({"preallocate": "yes"}, "true or false"),
        ({"no.such.config": "1"}, "Unknown topic config"),
        ({MIRROR_NAME: "m"}, "Unknown topic config"),
        ({"retention.ms": None}, "Null value"),
    ],
)
def test_invalid_topic_configs_are_rejected(configs: dict, fragment: str) -> None:
    with pytest.raises(ConfigError) as raised:
        validate_topic_configs(configs)
    assert fragment in str(raised.value)


def test_mirror_name_is_allowed_internally_with_its_suffixes() -> None:
    validate_topic_configs({MIRROR_NAME: "my-mirror.paused"}, allow_internal=True)
    with pytest.raises(ConfigError):
        validate_topic_configs({MIRROR_NAME: "bad mirror"}, allow_internal=True)


def test_topic_config_precedence_and_synonyms() -> None:
    layers = BrokerConfigLayers(
        dynamic_broker={"log.segment.bytes": "2048"},
        static={"log.retention.ms": "1000", "log.segment.bytes": "4096"},
    )
    resolved = {v.name: v for v in resolve_topic_config({"cleanup.policy": "compact"}, layers)}
    assert MIRROR_NAME not in resolved
    assert resolved["cleanup.policy"].source == ConfigSource.TOPIC_CONFIG
    assert resolved["cleanup.policy"].synonyms[1] == (
        "log.cleanup.policy",
        "delete",
        ConfigSource.DEFAULT_CONFIG,
    )
    assert (resolved["retention.ms"].value, resolved["retention.ms"].source) == (
        "1000",
        ConfigSource.STATIC_BROKER_CONFIG,
    )
    segment = resolved["segment.bytes"]
    assert segment.value == "2048"
    assert [s[2] for s in segment.synonyms] == [
        ConfigSource.DYNAMIC_BROKER_CONFIG,
        ConfigSource.STATIC_BROKER_CONFIG,
        ConfigSource.DEFAULT_CONFIG,
    ]
    assert resolved["flush.ms"].is_default


def test_effective_broker_config_is_typed() -> None:
    layers = BrokerConfigLayers(dynamic_default={"num.partitions": "4"})
    assert effective_broker_config(layers, "num.partitions") == 4
    assert effective_broker_config(layers, "auto.create.topics.enable") is True


def test_only_dynamic_broker_configs_are_alterable() -> None:
    validate_broker_configs({"log.retention.ms": "10", "num.partitions": None})
    with pytest.raises(ConfigError, match="dynamically"):
        validate_broker_configs({"broker.id": "3"})
    with pytest.raises(ConfigError, match="Unknown"):
        validate_broker_configs({"nope": "1"})


def test_static_configs_from_toml_values() -> None:
    assert normalize_static_configs({"auto.create.topics.enable": False, "num.partitions": 3}) == {
        "auto.create.topics.enable": "false",
        "num.partitions": "3",
    }
    with pytest.raises(ConfigError):
        normalize_static_configs({"num.partitions": "many"})


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("orders", True),
        ("a.b_c-1", True),
        ("", False),
        (".", False),
        ("..", False),
        ("x" * 250, False),
        ("has space", False),
        ("ünïcode", False),
    ],
)
def test_topic_name_rules(name: str, ok: bool) -> None:
    assert (topic_name_error(name) is None) == ok


def test_embedded_default_describes_two_three_broker_clusters() -> None:
    specs = {s.name: s for s in parse_cluster_specs(DEFAULT_CLUSTERS_TOML)}
    assert sorted(specs) == ["backup", "primary"]
    assert [specs["primary"].broker_port(k) for k in (1, 2, 3)] == [9092, 9093, 9094]
    assert specs["backup"].brokers == 3
    assert specs["backup"].broker_port(1) == 9192


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "no [cluster"),
        ("[cluster.a]\nbrokers = 0\n", "positive"),
        ("[cluster.a]\nportt = 1\n", "unknown key"),
        ('[cluster.a.config]\n"num.partitions" = "x"\n', "num.partitions"),
        ("[cluster.a\n", "invalid TOML"),
    ],
)
def test_bad_cluster_files_are_reported(text: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_cluster_specs(text)
    assert fragment in str(raised.value)
