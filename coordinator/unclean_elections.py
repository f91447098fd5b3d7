"""Unclean leader elections of mirror topics, seen in two successive metadata snapshots.

KIP-1279 leaves unclean elections unsupported unless a topic sets
``mirror.support.unclean.leader.election`` (LME truncation then waits for every replica,
not only the ISR): a replica that missed the truncation and wins an unclean election can
hold records the source never had, a divergence no later fetch detects. The spec asks for
a warning when that happens. An election is unclean when the new leader was not in the
ISR the partition had before it (a clean election picks an ISR member).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mirrorsim.broker.config import MIRROR_NAME
from mirrorsim.broker.metadata.models import TopicRecord

SUPPORT_UNCLEAN_ELECTION = "mirror.support.unclean.leader.election"
NO_LEADER = -1


@dataclass(frozen=True, slots=True)
class UncleanElection:
    topic: str
    partition: int
    leader: int
    previous_isr: tuple[int, ...]


def unclean_mirror_elections(
    before: Mapping[str, TopicRecord], after: Mapping[str, TopicRecord]
) -> list[UncleanElection]:
    """The partitions of mirror topics without unclean-election support whose leader in
    ``after`` was outside their ISR in ``before`` (same topic id)."""
    found = []
    for name, topic in after.items():
        previous = before.get(name)
        if previous is None or previous is topic or previous.topic_id != topic.topic_id:
            continue
        if not topic.configs.get(MIRROR_NAME) or _supported(topic.configs):
            continue
        old = {p.partition: p for p in previous.partitions}
        for current in topic.partitions:
            prior = old.get(current.partition)
            if prior is None or current.leader in (NO_LEADER, prior.leader):
                continue
            if current.leader not in prior.isr:
                found.append(
                    UncleanElection(name, current.partition, current.leader, tuple(prior.isr))
                )
    return found


def _supported(configs: Mapping[str, str]) -> bool:
    return str(configs.get(SUPPORT_UNCLEAN_ELECTION, "false")).lower() == "true"
