"""PauseMirrorTopics and RemoveTopicsFromMirror check partition states as the spec's table
says: a FAILED partition can be removed (the spec's restart path) but never paused."""

from __future__ import annotations

from typing import Any

from helpers.mirrors import MIRROR, MIRROR_CONFIGS, broker_of, mirror_state, produce

from mirrorsim.broker.config import MIRROR_NAME
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.protocol.errors import ErrorCode


def corrupt_last_byte(source: Any, topic: str) -> None:
    """Flip the last byte of the source segment: its last batch no longer matches its CRC."""
    segment = broker_of(source).replica_manager.partition(topic, 0).log.dir / ("0" * 20 + ".log")
    data = bytearray(segment.read_bytes())
    data[-1] ^= 0xFF
    segment.write_bytes(bytes(data))


async def test_a_failed_topic_cannot_be_paused_but_can_be_removed(
    start_cluster: Any, wait_for: Any
) -> None:
    source = await start_cluster("primary", configs=MIRROR_CONFIGS)
    destination = await start_cluster("backup", configs=MIRROR_CONFIGS)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic("orders", 1, 1)])).all()
    await produce(source.bootstrap, "orders", 3)
    corrupt_last_byte(source, "orders")
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, ["orders"])).all()
        await wait_for(lambda: mirror_state(destination, "orders", 0) == "FAILED", timeout=20)

        paused = await admin.pause_mirror_topics(MIRROR, ["orders"])
        assert paused["orders"] is not None
        assert paused["orders"].code == ErrorCode.INVALID_REQUEST
        configs = broker_of(destination).snapshot.topics["orders"].configs
        assert configs[MIRROR_NAME] == MIRROR

        (await admin.remove_topics_from_mirror(MIRROR, ["orders"])).all()
        await wait_for(lambda: mirror_state(destination, "orders", 0) == "STOPPED", timeout=20)
