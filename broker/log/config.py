"""Per-partition log settings under Kafka's topic-config names, with Kafka's defaults.

Topic configs arrive as strings (CreateTopics, AlterConfigs, the metadata store), so
``from_topic_config`` parses exactly the keys Kafka defines and leaves every other key
(``min.insync.replicas`` and friends) to the components that own them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

LONG_MAX = 9223372036854775807
CLEANUP_POLICIES = ("delete", "compact", "compact,delete", "")
"""Kafka accepts an empty ``cleanup.policy`` (KIP-1161 gives it its meaning): neither
retention deletes nor compaction cleans; only the log start offset moves the log's head."""
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")


@dataclass(frozen=True, slots=True)
class LogConfig:
    segment_bytes: int = 1073741824
    segment_ms: int = 604800000
    segment_jitter_ms: int = 0
    retention_ms: int = 604800000
    retention_bytes: int = -1
    cleanup_policy: str = "delete"
    delete_retention_ms: int = 86400000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    index_interval_bytes: int = 4096
    segment_index_bytes: int = 10485760
    max_message_bytes: int = 1048588
    message_timestamp_type: str = "CreateTime"
    file_delete_delay_ms: int = 60000

    def __post_init__(self) -> None:
        if self.cleanup_policy not in CLEANUP_POLICIES:
            raise ValueError(f"cleanup.policy must be one of {CLEANUP_POLICIES}")
        if self.message_timestamp_type not in TIMESTAMP_TYPES:
            raise ValueError(f"message.timestamp.type must be one of {TIMESTAMP_TYPES}")
        if self.segment_bytes < 14:
            raise ValueError("segment.bytes must be at least 14")
        if self.segment_index_bytes < 12:
            raise ValueError("segment.index.bytes must hold at least one entry")

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @classmethod
    def from_topic_config(cls, configs: Mapping[str, str]) -> LogConfig:
        """Parse Kafka topic configs (``"retention.ms": "1000"``); unknown keys are ignored."""
        values: dict[str, Any] = {}
        for field in fields(cls):
            key = field.name.replace("_", ".")
            if key in configs:
                parse = _parse_policy if key == "cleanup.policy" else _PARSERS[field.type]
                values[field.name] = parse(configs[key].strip())
        return cls(**values)


def _parse_policy(text: str) -> str:
    parts = sorted(p.strip() for p in text.split(",") if p.strip())
    return ",".join(parts)


_PARSERS: dict[str, Callable[[str], Any]] = {"int": int, "float": float, "str": str}
