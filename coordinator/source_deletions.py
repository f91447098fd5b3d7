"""Mirror topics whose source topic was deleted: stopped, yet still in the mirror.

The spec moves such a topic's partitions to STOPPED "to prevent accidental deletions
from affecting the destination", and leaves removing the topic from the mirror to the
operator. So ``mirror.name`` keeps naming the mirror, and the stop is the internal topic
config ``mirror.stop.reason`` beside it, set by the mirror's metadata coordinator. It
travels with the topic's metadata to every broker: the partition leaders read
``mirror.name`` through :func:`effective_mirror_name`, which turns the stop into the
``.removed`` intent, so the partitions take the failover's STOPPING path (fetcher
removed, LSO truncation, LME, leader epoch bump, MIRROR_PID_RESET) and end STOPPED; the
replica layer lets clients write to the topic once it is STOPPED; the metadata sync
leaves the topic alone. Adding the topic to the mirror again clears the config.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from mirrorsim.broker.config import MIRROR_NAME, MIRROR_STOP_REASON
from mirrorsim.coordinator.broker_ports import SourceDeletionsHost
from mirrorsim.coordinator.state_machine import (
    REMOVED_SUFFIX,
    MirrorNameIntent,
    parse_mirror_name,
)
from mirrorsim.coordinator.sync import StopReason
from mirrorsim.protocol.errors import ErrorCode, KafkaError

log = logging.getLogger(__name__)


def effective_mirror_name(configs: Mapping[str, str]) -> str | None:
    """``mirror.name`` as the partition state machine must read it: ``<mirror>.removed``
    for a topic the mirror stopped itself, the config value otherwise."""
    value = configs.get(MIRROR_NAME)
    parsed = parse_mirror_name(value)
    if not configs.get(MIRROR_STOP_REASON) or parsed.intent is MirrorNameIntent.NONE:
        return value
    return f"{parsed.mirror}{REMOVED_SUFFIX}"


class SourceDeletionStopper:
    """The metadata sync's ``MirrorTopicStopper``: sets ``mirror.stop.reason``."""

    def __init__(self, broker: SourceDeletionsHost) -> None:
        self._broker = broker

    async def stop_mirror_topic(self, mirror: str, topic: str, reason: StopReason) -> None:
        record = self._broker.snapshot.topics.get(topic)
        if record is None or record.configs.get(MIRROR_STOP_REASON):
            return
        log.warning("mirror %s: stopping topic %s: %s", mirror, topic, reason.value)
        try:
            await self._broker.controller.update_topic_configs(
                topic, lambda current: {MIRROR_STOP_REASON: reason.name, **current}
            )
        except KafkaError as exc:
            if exc.code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                raise
            log.info(
                "mirror %s: topic %s was deleted here before it could be stopped", mirror, topic
            )
