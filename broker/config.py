"""Broker and topic configuration definitions, under Kafka's own names.

A topic config falls back to its broker synonym (``retention.ms`` to ``log.retention.ms``)
and then to the default, exactly the precedence Kafka reports in DescribeConfigs
synonyms. Values travel as strings (that is how the wire protocol and the metadata store
carry them); ``ConfigDef.parse`` is the one place that turns a string into a typed value
and the one place that rejects a bad one.
"""

from __future__ import annotations

import enum
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mirrorsim.broker.log.config import LogConfig

log = logging.getLogger(__name__)

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1

MIRROR_NAME = "mirror.name"
MIRROR_STOP_REASON = "mirror.stop.reason"
"""Set on a mirror topic stopped by the mirror itself (its source topic was deleted): the
topic stays in the mirror, STOPPED and writable, until the operator removes it."""
"""Internal topic config naming the mirror that owns a topic; hidden from users."""


class ConfigType(enum.IntEnum):
    """Kafka's ``ConfigDef.Type`` numbering, as DescribeConfigs v3+ reports it."""

    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(enum.IntEnum):
    """Kafka's ``DescribeConfigsResponse.ConfigSource`` numbering."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


class ConfigError(ValueError):
    """A config name or value Kafka would reject with INVALID_CONFIG."""


Validator = Callable[[Any], str | None]


def at_least(low: float) -> Validator:
    return lambda v: None if v >= low else f"Value must be at least {low}"


def between(low: float, high: float) -> Validator:
    return lambda v: None if low <= v <= high else f"Value must be in [{low}, {high}]"


def one_of(*choices: str) -> Validator:
    def check(value: Any) -> str | None:
        items = value if isinstance(value, list) else [value]
        bad = [item for item in items if item not in choices]
        return f"String must be one of: {', '.join(choices)}" if bad else None

    return check


def one_of_ignoring_case(*choices: str) -> Validator:
    """Kafka's ``CaseInsensitiveValidString``."""

    def check(value: Any) -> str | None:
        if str(value).lower() in choices:
            return None
        return f"String must be one of (case insensitive): {', '.join(choices)}"

    return check


_TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_NAME_LENGTH = 249


def topic_name_error(name: str) -> str | None:
    """Why Kafka's ``Topic.validate`` would reject ``name``, or None."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return 'Topic name cannot be "." or ".."'
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        return f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters"
    if not _TOPIC_NAME.match(name):
        return (
            f'Topic name "{name}" is illegal, it contains a character other than '
            "ASCII alphanumerics, '.', '_' and '-'"
        )
    return None


_THROTTLED_REPLICA = re.compile(r"^\d+:\d+$")


def _throttled_replicas_check(value: Any) -> str | None:
    """Kafka's ``ThrottledReplicaListValidator``: ``*`` alone, or ``partition:broker`` pairs."""
    if value == ["*"] or all(_THROTTLED_REPLICA.match(item) for item in value):
        return None
    return (
        "must be the literal '*' or a list of replicas in the following format: "
        "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
    )


def _mirror_name_check(value: Any) -> str | None:
    base = str(value).removesuffix(".removed").removesuffix(".paused")
    return topic_name_error(base) if value else None


@dataclass(frozen=True, slots=True)
class ConfigDef:
    name: str
    type: ConfigType
    default: str | None
    validator: Validator | None = None
    dynamic: bool = False
    """Whether IncrementalAlterConfigs may change it on a broker resource."""
    sensitive: bool = False
    read_only: bool = False

    def parse(self, raw: str | None) -> Any:
        """The typed value of ``raw``; raises ConfigError as Kafka's ConfigDef would."""
        if raw is None:
            return None
        try:
            value = _PARSERS[self.type](raw.strip())
        except ValueError as exc:
            raise ConfigError(f"Invalid value {raw} for configuration {self.name}: {exc}") from None
        if self.validator is not None:
            problem = self.validator(value)
            if problem:
                raise ConfigError(f"Invalid value {raw} for configuration {self.name}: {problem}")
        return value


def _parse_bool(raw: str) -> bool:
    lowered = raw.lower()
    if lowered not in ("true", "false"):
        raise ValueError("Expected value to be either true or false")
    return lowered == "true"


def _parse_int(low: int, high: int) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        try:
            value = int(raw)
        except ValueError:
            raise ValueError("Not a number of type INT") from None
        if not low <= value <= high:
            raise ValueError("Out of range")
        return value

    return parse


def _parse_list(raw: str) -> list[str]:
    return [item.strip() for item in raw.split(",") if item.strip()]


_PARSERS: dict[ConfigType, Callable[[str], Any]] = {
    ConfigType.BOOLEAN: _parse_bool,
    ConfigType.STRING: str,
    ConfigType.INT: _parse_int(-(2**31), INT_MAX),
    ConfigType.SHORT: _parse_int(-(2**15), 2**15 - 1),
    ConfigType.LONG: _parse_int(-(2**63), LONG_MAX),
    ConfigType.DOUBLE: float,
    ConfigType.LIST: _parse_list,
    ConfigType.CLASS: str,
    ConfigType.PASSWORD: str,
}


def _hidden_api_keys_check(value: Any) -> str | None:
    """Entries are ``KEY`` (not advertised) or ``KEY:MAX`` (advertised up to version MAX)."""
    for entry in value:
        if not re.fullmatch(r"\d+(:\d+)?", entry):
            return f"{entry!r} is neither KEY nor KEY:MAX_VERSION"
    return None


_COMPRESSION = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
_TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")


@dataclass(frozen=True, slots=True)
class TopicConfigDef:
    definition: ConfigDef
    broker_synonym: str | None = None
    internal: bool = False
    """Internal configs are neither described nor user-alterable (``mirror.name``)."""

    @property
    def name(self) -> str:
        return self.definition.name


def _topic(
    name: str,
    type_: ConfigType,
    default: str | None,
    synonym: str | None,
    validator: Validator | None = None,
    *,
    internal: bool = False,
) -> TopicConfigDef:
    return TopicConfigDef(ConfigDef(name, type_, default, validator), synonym, internal)


T = ConfigType
TOPIC_CONFIGS: dict[str, TopicConfigDef] = {
    d.name: d
    for d in [
        _topic(
            "cleanup.policy", T.LIST, "delete", "log.cleanup.policy", one_of("delete", "compact")
        ),
        _topic("compression.type", T.STRING, "producer", "compression.type", one_of(*_COMPRESSION)),
        _topic(
            "delete.retention.ms",
            T.LONG,
            "86400000",
            "log.cleaner.delete.retention.ms",
            at_least(0),
        ),
        _topic("file.delete.delay.ms", T.LONG, "60000", "log.segment.delete.delay.ms", at_least(0)),
        _topic("flush.messages", T.LONG, str(LONG_MAX), "log.flush.interval.messages", at_least(1)),
        _topic("flush.ms", T.LONG, str(LONG_MAX), "log.flush.interval.ms", at_least(0)),
        _topic("index.interval.bytes", T.INT, "4096", "log.index.interval.bytes", at_least(0)),
        _topic(
            "max.compaction.lag.ms",
            T.LONG,
            str(LONG_MAX),
            "log.cleaner.max.compaction.lag.ms",
            at_least(1),
        ),
        _topic("max.message.bytes", T.INT, "1048588", "message.max.bytes", at_least(0)),
        _topic(
            "message.timestamp.type",
            T.STRING,
            "CreateTime",
            "log.message.timestamp.type",
            one_of(*_TIMESTAMP_TYPES),
        ),
        _topic(
            "message.timestamp.before.max.ms",
            T.LONG,
            str(LONG_MAX),
            "log.message.timestamp.before.max.ms",
            at_least(0),
        ),
        _topic(
            "message.timestamp.after.max.ms",
            T.LONG,
            str(LONG_MAX),
            "log.message.timestamp.after.max.ms",
            at_least(0),
        ),
        _topic(
            "min.cleanable.dirty.ratio",
            T.DOUBLE,
            "0.5",
            "log.cleaner.min.cleanable.ratio",
            between(0, 1),
        ),
        _topic(
            "min.compaction.lag.ms", T.LONG, "0", "log.cleaner.min.compaction.lag.ms", at_least(0)
        ),
        _topic("min.insync.replicas", T.INT, "1", "min.insync.replicas", at_least(1)),
        _topic("preallocate", T.BOOLEAN, "false", "log.preallocate"),
        _topic("retention.bytes", T.LONG, "-1", "log.retention.bytes"),
        _topic("retention.ms", T.LONG, "604800000", "log.retention.ms", at_least(-1)),
        _topic("segment.bytes", T.INT, "1073741824", "log.segment.bytes", at_least(14)),
        _topic("segment.index.bytes", T.INT, "10485760", "log.index.size.max.bytes", at_least(4)),
        _topic("segment.jitter.ms", T.LONG, "0", "log.roll.jitter.ms", at_least(0)),
        _topic("segment.ms", T.LONG, "604800000", "log.roll.ms", at_least(1)),
        _topic(
            "unclean.leader.election.enable", T.BOOLEAN, "false", "unclean.leader.election.enable"
        ),
        _topic(
            "follower.replication.throttled.replicas",
            T.LIST,
            "",
            "follower.replication.throttled.replicas",
        ),
        _topic(
            "leader.replication.throttled.replicas",
            T.LIST,
            "",
            "leader.replication.throttled.replicas",
        ),
        _topic("mirror.support.unclean.leader.election", T.BOOLEAN, "false", None),
        _topic(
            "mirror.replication.throttled.replicas",
            T.LIST,
            "",
            None,
            _throttled_replicas_check,
        ),
        _topic(MIRROR_NAME, T.STRING, None, None, _mirror_name_check, internal=True),
        _topic(MIRROR_STOP_REASON, T.STRING, None, None, internal=True),
    ]
}


def _broker(
    name: str,
    type_: ConfigType,
    default: str | None,
    validator: Validator | None = None,
    *,
    dynamic: bool = False,
    read_only: bool = False,
) -> ConfigDef:
    return ConfigDef(name, type_, default, validator, dynamic=dynamic, read_only=read_only)


def _broker_synonyms_of_topic_configs() -> list[ConfigDef]:
    """Every topic config's broker synonym is a dynamic cluster-wide default, as in Kafka."""
    return [
        ConfigDef(
            d.broker_synonym,
            d.definition.type,
            d.definition.default,
            d.definition.validator,
            dynamic=True,
        )
        for d in TOPIC_CONFIGS.values()
        if d.broker_synonym is not None
    ]


SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_LISTENER_JAAS_CONFIG = re.compile(
    r"listener\.name\.[a-z0-9_-]+\.(plain|scram-sha-256|scram-sha-512)\.sasl\.jaas\.config"
)
_JAAS_CONFIG_DEF = ConfigDef(
    "listener.name.<listener>.<mechanism>.sasl.jaas.config",
    ConfigType.PASSWORD,
    None,
    sensitive=True,
    read_only=True,
)


def listener_jaas_config_name(listener: str, mechanism: str) -> str:
    """Kafka's per-listener JAAS config name: listener and mechanism in lower case."""
    return f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"


def static_config_def(name: str) -> ConfigDef | None:
    """A broker config definition, including the listener-prefixed JAAS configs, which
    only a config file sets (they are never described nor altered)."""
    if _LISTENER_JAAS_CONFIG.fullmatch(name):
        return _JAAS_CONFIG_DEF
    return BROKER_CONFIGS.get(name)


def _security_configs() -> list[ConfigDef]:
    """Listeners, SASL, TLS and authorizer settings (see docs/security.md); all static."""
    return [
        _broker("listeners", T.LIST, None, read_only=True),
        _broker("advertised.listeners", T.LIST, None, read_only=True),
        _broker(
            "listener.security.protocol.map",
            T.LIST,
            "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
            read_only=True,
        ),
        _broker("inter.broker.listener.name", T.STRING, None, read_only=True),
        _broker(
            "security.inter.broker.protocol",
            T.STRING,
            None,
            one_of("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"),
            read_only=True,
        ),
        _broker(
            "sasl.mechanism.inter.broker.protocol",
            T.STRING,
            "PLAIN",
            one_of(*SASL_MECHANISMS),
            read_only=True,
        ),
        _broker(
            "sasl.enabled.mechanisms",
            T.LIST,
            ",".join(SASL_MECHANISMS),
            one_of(*SASL_MECHANISMS),
            read_only=True,
        ),
        ConfigDef("sasl.users", T.PASSWORD, None, sensitive=True, read_only=True),
        _broker("ssl.keystore.location", T.STRING, None, read_only=True),
        _broker("ssl.key.location", T.STRING, None, read_only=True),
        ConfigDef("ssl.key.password", T.PASSWORD, None, sensitive=True, read_only=True),
        _broker("ssl.truststore.location", T.STRING, None, read_only=True),
        _broker("ssl.endpoint.identification.algorithm", T.STRING, "https", read_only=True),
        _broker(
            "ssl.client.auth",
            T.STRING,
            "none",
            one_of("none", "requested", "required"),
            read_only=True,
        ),
        _broker("authorizer.class.name", T.STRING, "", read_only=True),
        _broker("super.users", T.STRING, "", read_only=True),
        _broker("allow.everyone.if.no.acl.found", T.BOOLEAN, "false", read_only=True),
    ]


BROKER_CONFIGS: dict[str, ConfigDef] = {
    d.name: d
    for d in [
        *_broker_synonyms_of_topic_configs(),
        _broker("broker.id", T.INT, "-1", read_only=True),
        _broker("broker.rack", T.STRING, None, read_only=True),
        _broker("num.partitions", T.INT, "1", at_least(1), dynamic=True),
        _broker("default.replication.factor", T.SHORT, "1", at_least(1), dynamic=True),
        _broker("auto.create.topics.enable", T.BOOLEAN, "true", read_only=True),
        _broker("delete.topic.enable", T.BOOLEAN, "true", read_only=True),
        _broker("socket.request.max.bytes", T.INT, "104857600", at_least(1), read_only=True),
        _broker("connections.max.idle.ms", T.LONG, "600000", read_only=True),
        _broker("log.retention.check.interval.ms", T.LONG, "300000", at_least(1), read_only=True),
        _broker("log.cleaner.enable", T.BOOLEAN, "true", read_only=True),
        _broker("log.cleaner.backoff.ms", T.LONG, "15000", at_least(1), dynamic=True),
        _broker("offsets.topic.num.partitions", T.INT, "50", at_least(1), read_only=True),
        _broker("max.request.partition.size.limit", T.INT, "2000", at_least(1), read_only=True),
        _broker("offsets.topic.replication.factor", T.SHORT, "3", at_least(1), read_only=True),
        _broker("offsets.retention.minutes", T.INT, "10080", at_least(1), read_only=True),
        _broker("transaction.state.log.num.partitions", T.INT, "50", at_least(1), read_only=True),
        _broker("transaction.max.timeout.ms", T.INT, "900000", at_least(1), read_only=True),
        _broker(
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            T.INT,
            "10000",
            at_least(1),
            read_only=True,
        ),
        _broker("transaction.fault.stop.before.markers", T.BOOLEAN, "false", read_only=True),
        _broker("group.initial.rebalance.delay.ms", T.INT, "3000", at_least(0), read_only=True),
        _broker("group.min.session.timeout.ms", T.INT, "6000", read_only=True),
        _broker("group.max.session.timeout.ms", T.INT, "1800000", read_only=True),
        _broker("group.max.size", T.INT, str(INT_MAX), at_least(1), read_only=True),
        _broker("offset.metadata.max.bytes", T.INT, "4096", at_least(0), read_only=True),
        _broker("group.consumer.assignors", T.LIST, "uniform,range", read_only=True),
        _broker("group.consumer.heartbeat.interval.ms", T.INT, "5000", at_least(1), read_only=True),
        _broker("group.consumer.session.timeout.ms", T.INT, "45000", at_least(1), read_only=True),
        _broker("group.consumer.max.size", T.INT, str(INT_MAX), at_least(1), read_only=True),
        _broker(
            "group.consumer.migration.policy",
            T.STRING,
            "bidirectional",
            one_of_ignoring_case("bidirectional", "upgrade", "downgrade", "disabled"),
            read_only=True,
        ),
        _broker("group.share.heartbeat.interval.ms", T.INT, "5000", at_least(1), read_only=True),
        _broker("group.share.session.timeout.ms", T.INT, "45000", at_least(1), read_only=True),
        _broker("group.share.max.size", T.INT, "200", between(1, 1000), read_only=True),
        _broker("group.share.max.groups", T.SHORT, "10", between(1, 100), read_only=True),
        _broker("group.share.delivery.count.limit", T.INT, "5", between(2, 10), read_only=True),
        _broker(
            "group.share.record.lock.duration.ms",
            T.INT,
            "30000",
            between(1000, 60000),
            read_only=True,
        ),
        _broker(
            "group.share.partition.max.record.locks",
            T.INT,
            "2000",
            between(100, 10000),
            read_only=True,
        ),
        _broker("replica.lag.time.max.ms", T.LONG, "30000", read_only=True),
        _broker("num.replica.fetchers", T.INT, "1", at_least(1), read_only=True),
        _broker("replica.fetch.max.bytes", T.INT, "1048576", at_least(0), read_only=True),
        _broker("replica.fetch.response.max.bytes", T.INT, "10485760", at_least(0), read_only=True),
        _broker("replica.fetch.wait.max.ms", T.INT, "500", at_least(0), read_only=True),
        _broker("replica.fetch.min.bytes", T.INT, "1", read_only=True),
        _broker("replica.fetch.backoff.ms", T.INT, "1000", at_least(0), read_only=True),
        _broker("controlled.shutdown.enable", T.BOOLEAN, "true", read_only=True),
        _broker("auto.leader.rebalance.enable", T.BOOLEAN, "true", read_only=True),
        _broker(
            "leader.imbalance.check.interval.seconds", T.LONG, "300", at_least(1), read_only=True
        ),
        _broker("broker.heartbeat.interval.ms", T.INT, "2000", at_least(1), read_only=True),
        _broker("broker.session.timeout.ms", T.INT, "9000", at_least(1), read_only=True),
        _broker("metadata.refresh.interval.ms", T.INT, "500", at_least(1), read_only=True),
        _broker("mirror.metadata.refresh.interval.ms", T.LONG, "30000", at_least(1), dynamic=True),
        _broker("mirror.topic.num.partitions", T.INT, "50", at_least(1), read_only=True),
        _broker("mirror.topic.replication.factor", T.SHORT, "3", at_least(1), read_only=True),
        _broker("mirror.num.replica.fetchers", T.INT, "1", at_least(1), dynamic=True),
        _broker("mirror.fetch.max.wait.ms", T.INT, "500", at_least(0), dynamic=True),
        _broker(
            "mirror.replication.throttled.rate", T.LONG, str(LONG_MAX), at_least(0), dynamic=True
        ),
        _broker("quota.window.num", T.INT, "11", at_least(1), read_only=True),
        _broker("quota.window.size.seconds", T.INT, "1", at_least(1), read_only=True),
        _broker("shutdown.drain.timeout.ms", T.LONG, "5000", at_least(0), read_only=True),
        _broker("metrics.port", T.INT, None, between(0, 65535), read_only=True),
        _broker("test.hidden.api.keys", T.LIST, "", _hidden_api_keys_check, read_only=True),
        *_security_configs(),
    ]
}


@dataclass(frozen=True, slots=True)
class ConfigValue:
    """One resolved config with where its value came from (DescribeConfigs' ``source``)."""

    name: str
    value: str | None
    source: ConfigSource
    definition: ConfigDef
    synonyms: tuple[tuple[str, str | None, ConfigSource], ...] = ()

    @property
    def is_default(self) -> bool:
        return self.source == ConfigSource.DEFAULT_CONFIG


@dataclass(frozen=True, slots=True)
class BrokerConfigLayers:
    """The three places a broker config can be set, highest precedence first."""

    dynamic_broker: Mapping[str, str] = field(default_factory=dict)
    dynamic_default: Mapping[str, str] = field(default_factory=dict)
    static: Mapping[str, str] = field(default_factory=dict)

    def lookup(self, name: str) -> list[tuple[str, str | None, ConfigSource]]:
        found: list[tuple[str, str | None, ConfigSource]] = []
        for layer, source in (
            (self.dynamic_broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
            (self.dynamic_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
            (self.static, ConfigSource.STATIC_BROKER_CONFIG),
        ):
            if name in layer:
                found.append((name, layer[name], source))
        definition = BROKER_CONFIGS.get(name)
        if definition is not None:
            found.append((name, definition.default, ConfigSource.DEFAULT_CONFIG))
        return found


def resolve_broker_config(layers: BrokerConfigLayers) -> list[ConfigValue]:
    values = []
    for name, definition in sorted(BROKER_CONFIGS.items()):
        chain = layers.lookup(name)
        _, value, source = chain[0]
        values.append(ConfigValue(name, value, source, definition, tuple(chain)))
    return values


def resolve_topic_config(
    overrides: Mapping[str, str], layers: BrokerConfigLayers
) -> list[ConfigValue]:
    """Every user-visible topic config with Kafka's precedence chain as synonyms."""
    values = []
    for name, topic_def in sorted(TOPIC_CONFIGS.items()):
        if topic_def.internal:
            continue
        chain: list[tuple[str, str | None, ConfigSource]] = []
        if name in overrides:
            chain.append((name, overrides[name], ConfigSource.TOPIC_CONFIG))
        if topic_def.broker_synonym is not None:
            chain.extend(layers.lookup(topic_def.broker_synonym))
        else:
            chain.append((name, topic_def.definition.default, ConfigSource.DEFAULT_CONFIG))
        _, value, source = chain[0]
        values.append(ConfigValue(name, value, source, topic_def.definition, tuple(chain)))
    return values


def topic_configs_with_broker_defaults(
    overrides: Mapping[str, str], layers: BrokerConfigLayers
) -> dict[str, str]:
    """The configs a topic's partitions run with: its overrides, then for every other
    topic config the value set on the broker under its synonym (``log.retention.ms``
    for ``retention.ms``), per-broker dynamic over cluster-default dynamic over static.

    Configs set nowhere are left out so that the components keep Kafka's defaults; with
    no broker-level setting the result is exactly the overrides.
    """
    effective = dict(overrides)
    for name, topic_def in TOPIC_CONFIGS.items():
        if name in effective or topic_def.broker_synonym is None:
            continue
        chain = layers.lookup(topic_def.broker_synonym)
        _, value, source = chain[0]
        if source != ConfigSource.DEFAULT_CONFIG and value is not None:
            effective[name] = value
    return effective


def effective_broker_config(layers: BrokerConfigLayers, name: str) -> Any:
    """The typed value of broker config ``name`` after applying every layer.

    A stored dynamic value that does not parse (written by hand or by an older version)
    is skipped for the next layer and logged once, so one bad value never stops the
    components that read the config."""
    definition = BROKER_CONFIGS[name]
    chain = layers.lookup(name)
    for _, value, source in chain[:-1]:
        try:
            return definition.parse(value)
        except ConfigError as exc:
            _report_unusable(name, value, source, exc)
    return definition.parse(chain[-1][1])


_reported_unusable: set[tuple[str, str | None, ConfigSource]] = set()


def _report_unusable(name: str, value: str | None, source: ConfigSource, exc: ConfigError) -> None:
    if (name, value, source) not in _reported_unusable:
        _reported_unusable.add((name, value, source))
        log.warning("ignoring %s value of %s: %s", source.name, name, exc)


def validate_topic_configs(
    configs: Mapping[str, str | None], *, allow_internal: bool = False
) -> None:
    """Raise ConfigError for an unknown topic config or a value Kafka would refuse."""
    for name, value in configs.items():
        topic_def = TOPIC_CONFIGS.get(name)
        if topic_def is None or (topic_def.internal and not allow_internal):
            raise ConfigError(f"Unknown topic config name: {name}")
        if value is None:
            raise ConfigError(f"Null value not supported for topic configs: {name}")
        check_topic_config_value(topic_def.definition, value)


def check_topic_config_value(definition: ConfigDef, value: str) -> None:
    """Raise ConfigError unless both the definition and the log accept ``value``, so no
    value is stored that a partition then cannot run with."""
    definition.parse(value)
    try:
        LogConfig.from_topic_config({definition.name: value})
    except ValueError as exc:
        raise ConfigError(
            f"Invalid value {value} for configuration {definition.name}: {exc}"
        ) from None


def applicable_topic_configs(configs: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(the configs a partition can run with, name -> why for those it cannot).

    Whatever the metadata store holds (a value written by an older version, or by hand),
    a refresh applies the rest and reports these instead of failing as a whole.
    """
    applicable: dict[str, str] = {}
    rejected: dict[str, str] = {}
    for name, value in configs.items():
        topic_def = TOPIC_CONFIGS.get(name)
        try:
            if topic_def is not None:
                check_topic_config_value(topic_def.definition, value)
        except ConfigError as exc:
            rejected[name] = str(exc)
        else:
            applicable[name] = value
    return applicable, rejected


def validate_broker_configs(configs: Mapping[str, str | None]) -> None:
    """Raise ConfigError unless every entry is a dynamically updatable broker config."""
    for name, value in configs.items():
        definition = BROKER_CONFIGS.get(name)
        if definition is None:
            raise ConfigError(f"Unknown broker config name: {name}")
        if not definition.dynamic:
            raise ConfigError(f"Cannot update these configs dynamically: {{{name}}}")
        if value is not None:
            definition.parse(value)


def stringify(value: Any) -> str:
    """A TOML/Python value as Kafka's string form (booleans lower-case, lists comma-joined)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(stringify(v) for v in value)
    return str(value)


def normalize_static_configs(configs: Mapping[str, Any]) -> dict[str, str]:
    """Static broker configs from a config file, validated; raises ConfigError."""
    result = {name: stringify(value) for name, value in configs.items()}
    for name, value in result.items():
        definition = static_config_def(name)
        if definition is None:
            raise ConfigError(f"Unknown broker config name: {name}")
        definition.parse(value)
    return result
