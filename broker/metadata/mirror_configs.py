"""A cluster mirror's configuration (config resource type MIRROR): names, checks, defaults.

The configuration is the one handed to CreateMirror: how to reach the source
(``bootstrap.servers``, ``security.protocol``, ``sasl.*``, ``ssl.*``, client timeouts)
and the three sync filters. Any other name is refused, so a typo cannot silently leave
the mirror on its old settings. The filters are checked with the same parsers the
metadata sync runs, so a value accepted here never fails a refresh cycle later.
Credentials are stored like every other value but never described back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mirrorsim.broker.config import ConfigDef, ConfigError, ConfigSource, ConfigType, ConfigValue
from mirrorsim.broker.metadata.alter_ops import AlterConfigOp, apply_alter_ops
from mirrorsim.coordinator.sync.acls import DEFAULT_ACL_INCLUDE, MIRROR_ACL_INCLUDE
from mirrorsim.coordinator.sync.filters import MirrorSyncFilters
from mirrorsim.coordinator.sync.groups import DEFAULT_GROUPS_INCLUDE, MIRROR_GROUPS_INCLUDE
from mirrorsim.coordinator.sync.patterns import SyncFilterError
from mirrorsim.coordinator.sync.topics import (
    DEFAULT_TOPIC_PROPERTIES_EXCLUDE,
    MIRROR_TOPIC_PROPERTIES_EXCLUDE,
)

BOOTSTRAP_SERVERS = "bootstrap.servers"
SECURITY_PROTOCOL = "security.protocol"
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
CREDENTIAL_PREFIXES = ("sasl.", "ssl.")
CLIENT_TIMEOUTS = (
    "request.timeout.ms",
    "default.api.timeout.ms",
    "retry.backoff.ms",
    "retry.backoff.max.ms",
    "reconnect.backoff.ms",
    "reconnect.backoff.max.ms",
)
SENSITIVE_NAMES = frozenset(
    {
        "sasl.jaas.config",
        "ssl.keystore.key",
        "ssl.keystore.certificate.chain",
        "ssl.truststore.certificates",
    }
)
"""Kafka's PASSWORD-typed client configs whose names do not say ``password``/``secret``."""


def _bootstrap_problem(value: object) -> str | None:
    servers = [s.strip() for s in value if s.strip()] if isinstance(value, list) else []
    if not servers:
        return "at least one host:port is required"
    for server in servers:
        host, sep, port = server.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            return f"{server!r} is not a host:port pair"
    return None


def _security_protocol_problem(value: object) -> str | None:
    if str(value).upper() in SECURITY_PROTOCOLS:
        return None
    return f"String must be one of: {', '.join(SECURITY_PROTOCOLS)}"


def _non_negative(value: object) -> str | None:
    return None if isinstance(value, int) and value >= 0 else "Value must be at least 0"


DESCRIBED_BY_DEFAULT = (
    ConfigDef(BOOTSTRAP_SERVERS, ConfigType.LIST, None, _bootstrap_problem, dynamic=True),
    ConfigDef(
        MIRROR_TOPIC_PROPERTIES_EXCLUDE,
        ConfigType.LIST,
        DEFAULT_TOPIC_PROPERTIES_EXCLUDE,
        dynamic=True,
    ),
    ConfigDef(MIRROR_GROUPS_INCLUDE, ConfigType.LIST, DEFAULT_GROUPS_INCLUDE, dynamic=True),
    ConfigDef(MIRROR_ACL_INCLUDE, ConfigType.LIST, DEFAULT_ACL_INCLUDE, dynamic=True),
    ConfigDef(SECURITY_PROTOCOL, ConfigType.STRING, None, _security_protocol_problem, dynamic=True),
)
"""The spec's mirror config table: described even when never set, with its defaults."""

_FIXED = {d.name: d for d in DESCRIBED_BY_DEFAULT} | {
    name: ConfigDef(name, ConfigType.INT, None, _non_negative, dynamic=True)
    for name in CLIENT_TIMEOUTS
}
FIXED_MIRROR_CONFIG_NAMES = frozenset(_FIXED)
"""Every mirror config name that is not a ``sasl.``/``ssl.`` client setting."""


RECONNECTING_NAMES = frozenset({BOOTSTRAP_SERVERS, SECURITY_PROTOCOL, *CLIENT_TIMEOUTS})
"""The fixed names that decide how the source is reached (with every ``sasl.``/``ssl.``
name): changing one reopens the mirror's source connections; the sync filters do not."""


def forces_reconnect(name: str) -> bool:
    """Whether a change of ``name`` must reopen the mirror's source connections."""
    return name in RECONNECTING_NAMES or name.startswith(CREDENTIAL_PREFIXES)


def is_sensitive(name: str) -> bool:
    return name in SENSITIVE_NAMES or "password" in name or "secret" in name


def mirror_config_definition(name: str) -> ConfigDef | None:
    """The definition of a mirror config name; None for a name a mirror does not take."""
    found = _FIXED.get(name)
    if found is not None:
        return found
    if not name.startswith(CREDENTIAL_PREFIXES) or name in CREDENTIAL_PREFIXES:
        return None
    if is_sensitive(name):
        return ConfigDef(name, ConfigType.PASSWORD, None, dynamic=True, sensitive=True)
    return ConfigDef(name, ConfigType.STRING, None, dynamic=True)


def validate_mirror_configs(configs: Mapping[str, str | None]) -> None:
    """Raise ConfigError unless ``configs`` is a complete, usable mirror configuration."""
    for name, value in configs.items():
        definition = mirror_config_definition(name)
        if definition is None:
            raise ConfigError(f"Unknown mirror config name: {name}")
        if value is None:
            raise ConfigError(f"Null value not supported for mirror config {name}")
        definition.parse(value)
    if not configs.get(BOOTSTRAP_SERVERS):
        raise ConfigError(f"Mirror config {BOOTSTRAP_SERVERS} is required")
    try:
        MirrorSyncFilters.from_mirror_config({k: v for k, v in configs.items() if v is not None})
    except SyncFilterError as exc:
        raise ConfigError(str(exc)) from None


def alter_mirror_configs(
    current: Mapping[str, str], ops: Sequence[AlterConfigOp]
) -> dict[str, str]:
    """The mirror's configuration after ``ops``; raises ConfigError as Kafka would refuse
    them (unknown name, null SET, APPEND/SUBTRACT on a non-list) or when the result is
    not a usable configuration (DELETE of ``bootstrap.servers`` included)."""
    definitions = {
        op.name: found for op in ops if (found := mirror_config_definition(op.name)) is not None
    }
    altered = apply_alter_ops(current, ops, definitions)
    validate_mirror_configs(altered)
    return altered


def describe_mirror_configs(configs: Mapping[str, str]) -> list[ConfigValue]:
    """The spec's table (set values, else defaults) followed by every other set name.

    A set value has no Kafka ``ConfigSource`` of its own (KIP-1279 adds none), so it is
    reported as UNKNOWN, which keeps it apart from the DEFAULT_CONFIG rows.
    """
    described = [
        ConfigValue(d.name, configs[d.name], ConfigSource.UNKNOWN, d)
        if d.name in configs
        else ConfigValue(d.name, d.default, ConfigSource.DEFAULT_CONFIG, d)
        for d in DESCRIBED_BY_DEFAULT
    ]
    shown = {d.name for d in DESCRIBED_BY_DEFAULT}
    for name in sorted(configs.keys() - shown):
        definition = mirror_config_definition(name) or ConfigDef(
            name, ConfigType.STRING, None, sensitive=is_sensitive(name)
        )
        described.append(ConfigValue(name, configs[name], ConfigSource.UNKNOWN, definition))
    return described
