"""Coordinator settings under Kafka's broker config names."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
"""How long a member that has never completed a join may wait for one (Kafka's constant)."""


@dataclass(frozen=True, slots=True)
class GroupConfig:
    initial_rebalance_delay_ms: int = 3000
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    max_size: int = 2**31 - 1
    offset_metadata_max_bytes: int = 4096

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
        }
        values = {
            field: int(str(properties[key])) for key, field in names.items() if key in properties
        }
        return cls(**values)
