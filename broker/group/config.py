"""Coordinator settings under Kafka's broker config names."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
"""How long a member that has never completed a join may wait for one (Kafka's constant)."""


class MigrationPolicy(enum.Enum):
    """`group.consumer.migration.policy`: which online conversions of a group with members
    are allowed (an empty group changes type on its first join whatever the policy)."""

    BIDIRECTIONAL = "bidirectional"
    UPGRADE = "upgrade"
    DOWNGRADE = "downgrade"
    DISABLED = "disabled"

    @property
    def upgrades(self) -> bool:
        """A classic group may become a consumer group when a consumer member joins."""
        return MIGRATIONS[self][0]

    @property
    def downgrades(self) -> bool:
        """A consumer group may become a classic group when its last consumer member goes."""
        return MIGRATIONS[self][1]


MIGRATIONS: dict[MigrationPolicy, tuple[bool, bool]] = {
    # policy: (upgrade allowed, downgrade allowed)
    MigrationPolicy.BIDIRECTIONAL: (True, True),
    MigrationPolicy.UPGRADE: (True, False),
    MigrationPolicy.DOWNGRADE: (False, True),
    MigrationPolicy.DISABLED: (False, False),
}


@dataclass(frozen=True, slots=True)
class GroupConfig:
    initial_rebalance_delay_ms: int = 3000
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    max_size: int = 2**31 - 1
    offset_metadata_max_bytes: int = 4096
    consumer_heartbeat_interval_ms: int = 5000
    consumer_session_timeout_ms: int = 45000
    consumer_assignors: tuple[str, ...] = ("uniform", "range")
    """Server-side assignors a KIP-848 member may name; the first is the default."""
    consumer_max_size: int = 2**31 - 1
    consumer_migration_policy: MigrationPolicy = MigrationPolicy.BIDIRECTIONAL
    share_heartbeat_interval_ms: int = 5000
    share_session_timeout_ms: int = 45000
    share_max_size: int = 200

    @classmethod
    def from_properties(cls, properties: Mapping[str, object]) -> GroupConfig:
        """Read `group.initial.rebalance.delay.ms` and friends; missing keys keep Kafka's
        defaults."""
        names = {
            "group.initial.rebalance.delay.ms": "initial_rebalance_delay_ms",
            "group.min.session.timeout.ms": "min_session_timeout_ms",
            "group.max.session.timeout.ms": "max_session_timeout_ms",
            "group.max.size": "max_size",
            "offset.metadata.max.bytes": "offset_metadata_max_bytes",
            "group.consumer.heartbeat.interval.ms": "consumer_heartbeat_interval_ms",
            "group.consumer.session.timeout.ms": "consumer_session_timeout_ms",
            "group.consumer.max.size": "consumer_max_size",
            "group.share.heartbeat.interval.ms": "share_heartbeat_interval_ms",
            "group.share.session.timeout.ms": "share_session_timeout_ms",
            "group.share.max.size": "share_max_size",
        }
        values: dict[str, object] = {
            field: int(str(properties[key])) for key, field in names.items() if key in properties
        }
        assignors = properties.get("group.consumer.assignors")
        if assignors is not None:
            values["consumer_assignors"] = _names(assignors)
        policy = properties.get("group.consumer.migration.policy")
        if policy is not None:
            values["consumer_migration_policy"] = MigrationPolicy(str(policy).strip().lower())
        return cls(**values)  # type: ignore[arg-type]


def _names(value: object) -> tuple[str, ...]:
    """A LIST config: a comma-separated string or already a list. Kafka also accepts an
    assignor's class name; its simple name is what members ask for."""
    items = value if isinstance(value, list | tuple) else str(value).split(",")
    names = (str(item).strip().rsplit(".", 1)[-1] for item in items)
    return tuple(_SIMPLE_NAMES.get(name, name) for name in names if name)


_SIMPLE_NAMES = {"UniformAssignor": "uniform", "RangeAssignor": "range"}
