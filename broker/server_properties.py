"""Kafka's ``server.properties`` read as a mirrorsim cluster: what applies, what is ignored.

An operator can hand mirrorsim the file a Kafka broker runs with. Every name falls in one
of three groups, reported once when the cluster is described:

- applied: mirrorsim defines the config (``num.partitions``, ``listeners``, ...), or it
  maps onto one that it defines (``node.id`` is the first broker id, ``log.dirs`` the data
  directory, ``log.retention.hours`` becomes ``log.retention.ms``);
- ignored: Kafka defines it but it means nothing here (``num.io.threads``, the KRaft
  quorum settings ``process.roles`` and ``controller.quorum.voters``);
- unknown: nobody defines it; Kafka warns and starts anyway, and so does mirrorsim.

The KRaft controller listeners (``controller.listener.names``) are left out of
``listeners``: the metadata database takes the place of the controller quorum.
A bad value of an applied config is refused, as Kafka refuses it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mirrorsim.broker.config import ConfigError, static_config_def, stringify
from mirrorsim.broker.kafka_config_names import is_kafka_broker_config

_ID_NAMES = ("node.id", "broker.id")
_DIR_NAMES = ("log.dirs", "log.dir")
_LISTENER_NAMES = ("listeners", "advertised.listeners")
_COARSE_DURATIONS: dict[str, tuple[tuple[str, int], ...]] = {
    "log.retention.ms": (("log.retention.minutes", 60_000), ("log.retention.hours", 3_600_000)),
    "log.roll.ms": (("log.roll.hours", 3_600_000),),
    "log.roll.jitter.ms": (("log.roll.jitter.hours", 3_600_000),),
}
"""Kafka's finer-grained name wins; a coarser one (minutes, hours) is converted to it."""


@dataclass(frozen=True, slots=True)
class BrokerSettings:
    """A broker config file split into what mirrorsim uses and what it reports."""

    configs: dict[str, str]
    """Static broker configs under mirrorsim's (= Kafka's) names, validated."""
    first_broker_id: int | None = None
    data_dir: Path | None = None
    ignored: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()

    def report(self) -> list[str]:
        """The lines to print: at most one for ignored names and one for unknown ones."""
        lines = []
        if self.ignored:
            lines.append(
                "ignoring Kafka broker configs that have no effect in mirrorsim: "
                + ", ".join(self.ignored)
            )
        if self.unknown:
            lines.append("ignoring unknown broker configs: " + ", ".join(self.unknown))
        return lines


def broker_settings(configs: Mapping[str, Any]) -> BrokerSettings:
    """Split Kafka broker configs (a ``server.properties`` or a TOML config table)."""
    raw = {name: stringify(value) for name, value in configs.items()}
    applied: dict[str, str] = {}
    ignored: list[str] = []
    unknown: list[str] = []
    controller_listeners = _controller_listener_names(raw)
    for name, value in raw.items():
        if name in _ID_NAMES or name in _DIR_NAMES:
            continue
        if name in _LISTENER_NAMES:
            kept = _without_listeners(value, controller_listeners)
            if kept:
                applied[name] = kept
            continue
        if static_config_def(name) is not None:
            applied[name] = value
        elif _coarse_duration_target(name) is not None:
            continue
        elif is_kafka_broker_config(name):
            ignored.append(name)
        else:
            unknown.append(name)
    applied.update(_converted_durations(raw))
    for name, value in applied.items():
        definition = static_config_def(name)
        assert definition is not None
        definition.parse(value)
    return BrokerSettings(
        configs=applied,
        first_broker_id=_broker_id(raw),
        data_dir=_data_dir(raw),
        ignored=tuple(sorted(ignored)),
        unknown=tuple(sorted(unknown)),
    )


def _broker_id(raw: Mapping[str, str]) -> int | None:
    ids = {}
    for name in _ID_NAMES:
        if name in raw:
            try:
                ids[name] = int(raw[name])
            except ValueError:
                raise ConfigError(f"Invalid value {raw[name]} for configuration {name}") from None
            if ids[name] < 0:
                raise ConfigError(f"{name} must be at least 0, got {ids[name]}")
    if len(set(ids.values())) > 1:
        raise ConfigError("If both broker.id and node.id are set, they must be equal")
    return next(iter(ids.values()), None)


def _data_dir(raw: Mapping[str, str]) -> Path | None:
    """The first of ``log.dirs`` (Kafka's precedence over ``log.dir``)."""
    for name in _DIR_NAMES:
        dirs = [d.strip() for d in raw.get(name, "").split(",") if d.strip()]
        if dirs:
            if len(dirs) > 1:
                raise ConfigError(f"{name}: mirrorsim keeps a broker's log in one directory")
            return Path(dirs[0])
    return None


def _controller_listener_names(raw: Mapping[str, str]) -> set[str]:
    names = raw.get("controller.listener.names", "")
    return {n.strip().upper() for n in names.split(",") if n.strip()}


def _without_listeners(value: str, names: set[str]) -> str:
    entries = [e.strip() for e in value.split(",") if e.strip()]
    return ",".join(e for e in entries if e.partition("://")[0].strip().upper() not in names)


def _coarse_duration_target(name: str) -> str | None:
    for target, coarse in _COARSE_DURATIONS.items():
        if any(name == coarse_name for coarse_name, _ in coarse):
            return target
    return None


def _converted_durations(raw: Mapping[str, str]) -> dict[str, str]:
    converted = {}
    for target, coarse in _COARSE_DURATIONS.items():
        if target in raw:
            continue
        for name, factor in coarse:
            if name in raw:
                try:
                    converted[target] = str(int(raw[name]) * factor)
                except ValueError:
                    raise ConfigError(
                        f"Invalid value {raw[name]} for configuration {name}"
                    ) from None
                break
    return converted
