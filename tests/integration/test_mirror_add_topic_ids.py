"""AddTopicsToMirror's TopicId: a topic sent with the id of the source topic it means is
mirrored under that id; one whose source topic has another id (it was deleted and created
again since the caller looked) is refused with UNKNOWN_TOPIC_ID and nothing is created."""

from __future__ import annotations

import uuid
from typing import Any

from helpers.mirrors import MIRROR

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.protocol.errors import ErrorCode


async def source_topic_id(bootstrap: str, topic: str) -> uuid.UUID:
    async with Admin(bootstrap=bootstrap) as admin:
        await admin.cluster.refresh_metadata([topic])
        found = admin.cluster.topic_id(topic)
    assert found is not None
    return found


async def test_a_topic_id_other_than_the_sources_is_refused(start_cluster: Any) -> None:
    source = await start_cluster("source")
    destination = await start_cluster("backup")
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic(t, 1, 1) for t in ("orders", "audit")])).all()
    orders_id = await source_topic_id(source.bootstrap, "orders")
    stale = uuid.uuid4()
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        results = await admin.add_topics_to_mirror(
            MIRROR, ["orders", "audit"], topic_ids={"orders": orders_id, "audit": stale}
        )
        assert results["orders"] is None
        refused = results["audit"]
        assert refused is not None and refused.code == ErrorCode.UNKNOWN_TOPIC_ID
        assert str(stale) in str(refused)
        topics = await admin.list_topics()
    assert "orders" in topics and "audit" not in topics
    assert await source_topic_id(destination.bootstrap, "orders") == orders_id


async def test_without_an_id_any_source_topic_of_the_name_is_mirrored(
    start_cluster: Any,
) -> None:
    source = await start_cluster("source")
    destination = await start_cluster("backup")
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic("orders", 1, 1)])).all()
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, ["orders"])).all()
    assert await source_topic_id(destination.bootstrap, "orders") == await source_topic_id(
        source.bootstrap, "orders"
    )
