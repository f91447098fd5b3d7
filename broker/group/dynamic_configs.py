"""Per-group configs (Kafka 4.x GROUP config resources, ``ConfigResource.Type`` 32).

Kafka lets an operator override, per group id, the session and heartbeat timeouts of
consumer (KIP-848), share and streams groups and a share group's record lock, offset reset
and isolation level. Values are checked as Kafka's ``GroupConfig`` checks them, within the
broker's bounds for that group type (Kafka's defaults, fixed here: sessions 45-60 s,
heartbeats 5-15 s, record locks 15-60 s, standby replicas 0-2). A group need not exist to
carry configs. A share group's record lock, offset reset and isolation level apply to its
share partitions (``broker/share/settings.py``); the session timeouts and heartbeat
intervals are stored and described only: consumer and share groups take theirs from the
broker's ``group.consumer.*`` and ``group.share.*`` configs, and streams groups are not
served.
"""

from __future__ import annotations

from collections.abc import Mapping

from mirrorsim.broker.config import (
    ConfigDef,
    ConfigError,
    ConfigSource,
    ConfigType,
    ConfigValue,
    between,
    one_of,
)

T = ConfigType


def _int(name: str, default: int, low: int, high: int) -> ConfigDef:
    return ConfigDef(name, T.INT, str(default), between(low, high), dynamic=True)


def _auto_offset_reset(value: object) -> str | None:
    text = str(value)
    if text in ("earliest", "latest") or text.startswith("by_duration:"):
        return None
    return "Must be one of earliest, latest or by_duration:<ISO-8601 duration>"


GROUP_CONFIGS: dict[str, ConfigDef] = {
    d.name: d
    for d in [
        _int("consumer.session.timeout.ms", 45_000, 45_000, 60_000),
        _int("consumer.heartbeat.interval.ms", 5_000, 5_000, 15_000),
        _int("share.session.timeout.ms", 45_000, 45_000, 60_000),
        _int("share.heartbeat.interval.ms", 5_000, 5_000, 15_000),
        _int("share.record.lock.duration.ms", 30_000, 15_000, 60_000),
        ConfigDef("share.auto.offset.reset", T.STRING, "latest", _auto_offset_reset, dynamic=True),
        ConfigDef(
            "share.isolation.level",
            T.STRING,
            "read_uncommitted",
            one_of("read_committed", "read_uncommitted"),
            dynamic=True,
        ),
        _int("streams.session.timeout.ms", 45_000, 45_000, 60_000),
        _int("streams.heartbeat.interval.ms", 5_000, 5_000, 15_000),
        _int("streams.num.standby.replicas", 0, 0, 2),
    ]
}


def validate_group_configs(configs: Mapping[str, str]) -> None:
    """Raise ConfigError (INVALID_CONFIG on the wire) for what Kafka's ``GroupConfig``
    refuses: an unknown name or a value out of its bounds. (Kafka also wants a heartbeat
    interval below its session timeout; with Kafka's default bounds, which are fixed here,
    the largest heartbeat is below the smallest session timeout.)"""
    for name, raw in configs.items():
        definition = GROUP_CONFIGS.get(name)
        if definition is None:
            raise ConfigError(f"Unknown group config name: {name}")
        definition.parse(raw)


def describe_group_configs(overrides: Mapping[str, str]) -> list[ConfigValue]:
    """Every group config: the group's own value (GROUP_CONFIG) or Kafka's default."""
    values = []
    for name, definition in sorted(GROUP_CONFIGS.items()):
        if name in overrides:
            value, source = overrides[name], ConfigSource.GROUP_CONFIG
        else:
            value, source = definition.default, ConfigSource.DEFAULT_CONFIG
        values.append(ConfigValue(name, value, source, definition, ((name, value, source),)))
    return values
