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

    def original_topic(self, topic: str) -> str:
        """The topic's name on the cluster it was first written to, every hop's prefix off."""
        upstream = self.upstream_topic(topic)
        return topic if upstream is None or upstream == topic else self.original_topic(upstream)

    def is_heartbeats_topic(self, topic: str) -> bool:
        """``heartbeats`` itself or a replica of one (``a.heartbeats``, ``b.a.heartbeats``)."""
        return self.original_topic(topic) == HEARTBEATS_TOPIC

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
        """MM2's and Kafka's internal topics; heartbeats are not internal (they replicate)."""
        return (
            topic.endswith(f"{self.separator}internal")
            or topic.endswith("-internal")
            or topic.startswith(("__", "."))
        )
