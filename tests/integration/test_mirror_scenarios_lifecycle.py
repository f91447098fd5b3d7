"""AddTopicsToMirror corner cases: a broker that has not seen the mirror yet, and the
topic configs a re-added topic keeps (destination-side ``mirror.*``) or never copies."""

from __future__ import annotations

import asyncio
from typing import Any

from helpers.mirrors import MIRROR, MIRROR_CONFIGS, mirror_state, produce
from helpers.replication import create_topic

from mirrorsim.client import Admin

TOPIC = "orders"
SUPPORT_UNCLEAN = "mirror.support.unclean.leader.election"


async def _stored_configs(cluster: Any, topic: str = TOPIC) -> dict[str, str]:
    store = cluster.brokers[0].store
    return dict((await asyncio.to_thread(store.topics, [topic]))[topic].configs)


async def test_add_topics_on_a_broker_that_has_not_seen_the_new_mirror(
    start_cluster: Any, wait_for: Any
) -> None:
    """The mirror exists in the store but not yet in this broker's view: the broker looks
    again instead of failing the request (and closing the connection)."""
    source = await start_cluster("primary", configs=MIRROR_CONFIGS)
    await create_topic(source, TOPIC, replicas=(1,))
    await produce(source.bootstrap, TOPIC, 3)
    destination = await start_cluster("backup", configs=MIRROR_CONFIGS)
    target = destination.brokers[0]
    await target.mirrors.state_topic.ensure_created()
    await asyncio.to_thread(
        target.store.create_mirror, MIRROR, {"bootstrap.servers": source.bootstrap}
    )
    assert not target.mirrors.sources.knows(MIRROR)
    async with Admin(bootstrap=destination.bootstrap) as admin:
        (await admin.add_topics_to_mirror(MIRROR, [TOPIC])).all()
    await wait_for(lambda: mirror_state(destination, TOPIC, 0) == "MIRRORING", timeout=15)


async def test_a_re_added_topic_keeps_its_destination_mirror_configs(
    start_cluster: Any, wait_for: Any
) -> None:
    """Source overrides are copied except the excluded ones (``mirror.*`` always); the
    destination's own ``mirror.*`` configs survive AddTopicsToMirror, even when the
    source carries the same name with another value."""
    source = await start_cluster("primary", configs=MIRROR_CONFIGS)
    await create_topic(
        source, TOPIC, replicas=(1,), configs={"retention.ms": "3600000", SUPPORT_UNCLEAN: "false"}
    )
    destination = await start_cluster("backup", configs=MIRROR_CONFIGS)
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, [TOPIC])).all()
        copied = await _stored_configs(destination)
        assert copied["retention.ms"] == "3600000"
        assert SUPPORT_UNCLEAN not in copied

        await wait_for(lambda: mirror_state(destination, TOPIC, 0) == "MIRRORING", timeout=15)
        (await admin.remove_topics_from_mirror(MIRROR, [TOPIC])).all()
        await wait_for(lambda: mirror_state(destination, TOPIC, 0) == "STOPPED", timeout=15)
        configs = await _stored_configs(destination)
        await destination.brokers[0].controller.set_topic_configs(
            TOPIC, {**configs, SUPPORT_UNCLEAN: "true"}
        )
        (await admin.add_topics_to_mirror(MIRROR, [TOPIC])).all()
    readded = await _stored_configs(destination)
    assert readded[SUPPORT_UNCLEAN] == "true"
    assert readded["mirror.name"] == MIRROR
    await wait_for(lambda: mirror_state(destination, TOPIC, 0) == "MIRRORING", timeout=15)
