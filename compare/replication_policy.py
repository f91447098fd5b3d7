"""MM2's DefaultReplicationPolicy: remote topic names and the internal topics' names.

A replicated topic is renamed ``<source alias><separator><topic>`` so that two clusters
can replicate each other without their topics colliding; the prefix also names where a
topic came from, which is how MM2 refuses to copy a topic back into a cluster it already
passed through (cycle detection by name alone).
"""

from __future__ import annotations

from dataclasses import dataclass

HEARTBEATS_TOPIC = "heartbeats"


@dataclass(frozen=True, slots=True)
class ReplicationPolicy:
    separator: str = "."

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        return f"{source_alias}{self.separator}{topic}"

    def topic_source(self, topic: str) -> str | None:
        """The alias of the cluster the topic was replicated from, None for a local topic."""
        alias, separator, _ = topic.partition(self.separator)
        return alias if separator else None

    def upstream_topic(self, topic: str) -> str | None:
        _, separator, rest = topic.partition(self.separator)
        return rest if separator else None

    def is_cycle(self, topic: str, target_alias: str) -> bool:
        """True when the topic already passed through ``target_alias`` (at any hop)."""
        current: str | None = topic
        while current is not None:
            if self.topic_source(current) == target_alias:
                return True
            current = self.upstream_topic(current)
        return False

    def offset_syncs_topic(self, target_alias: str) -> str:
        return f"mm2-offset-syncs{self.separator}{target_alias}{self.separator}internal"

    def checkpoints_topic(self, source_alias: str) -> str:
        return f"{source_alias}{self.separator}checkpoints{self.separator}internal"

    def is_internal(self, topic: str) -> bool:
        return (
            topic == HEARTBEATS_TOPIC
            or topic.endswith(f"{self.separator}internal")
            or topic.startswith("__")
        )
