"""LastMirroredEpochs needs READ on the cluster: the spec's ACL for the mirror principal's
truncation query on the source. A destination refused it waits in PREPARING (it never
mistakes the refusal for "no LME" and discards its log) and mirrors once granted."""

from __future__ import annotations

import logging
import uuid
from typing import Any

import pytest
from helpers.mirror_credentials import MIRROR_CREDENTIALS, SECURED_SOURCE
from helpers.mirrors import MIRROR, produce
from helpers.sasl import sasl_bootstrap

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import AclBinding, AclOperation, NewTopic, ResourceType
from mirrorsim.client.cluster import RequestSpec
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.messages.constants import MirrorApiKey

TOPIC = "orders"
RECORDS = 6
READ_CLUSTER = AclBinding(ResourceType.CLUSTER, "kafka-cluster", "User:mirror", AclOperation.READ)


def last_mirrored_epochs(topic_id: uuid.UUID) -> RequestSpec:
    return RequestSpec(
        MirrorApiKey.LAST_MIRRORED_EPOCHS,
        {
            "mirror_name": MIRROR,
            "topics": [{"topic_id": topic_id, "topic_name": TOPIC, "partitions": [0]}],
        },
    )


async def secured_source(start_cluster: Any) -> tuple[Any, uuid.UUID]:
    source = await start_cluster("primary", configs=SECURED_SOURCE)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic(TOPIC, 1, 1)])).all()
        grant = AclBinding(ResourceType.TOPIC, "*", "User:mirror", AclOperation.ALL)
        (await admin.create_acls([grant])).all()
    return source, source.brokers[0].replica_manager.topic_id(TOPIC)


async def test_last_mirrored_epochs_needs_read_on_the_cluster(start_cluster: Any) -> None:
    source, topic_id = await secured_source(start_cluster)
    request = last_mirrored_epochs(topic_id)
    async with Admin(bootstrap=sasl_bootstrap(source), config=MIRROR_CREDENTIALS) as mirror:
        refused = await mirror.cluster.send_to_any(request)
        assert refused.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        assert list(refused.topics) == []

        async with Admin(bootstrap=source.bootstrap) as admin:
            (await admin.create_acls([READ_CLUSTER])).all()
        allowed = await mirror.cluster.send_to_any(request)
        assert allowed.error_code == ErrorCode.NONE
        assert [t.topic_name for t in allowed.topics] == [TOPIC]
        assert [int(p.partition_index) for p in allowed.topics[0].partitions] == [0]


async def test_a_refused_destination_keeps_its_log_in_preparing_until_granted(
    start_cluster: Any, wait_for: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A topic mirrored, stopped, then added again: its log is not empty, so PREPARING
    asks the source for the LME, which needs READ on the source cluster."""
    caplog.set_level(logging.WARNING, logger="mirrorsim.coordinator.mirror_coordinator")
    source, _ = await secured_source(start_cluster)
    await produce(source.bootstrap, TOPIC, RECORDS)
    destination = await start_cluster(
        "backup", configs={"mirror.topic.num.partitions": 1, "mirror.fetch.max.wait.ms": 50}
    )
    mirrors = destination.brokers[0].mirrors

    def state() -> str | None:
        status = mirrors.partitions.get((TOPIC, 0))
        return None if status is None else status.state.name

    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(
            MIRROR, {"bootstrap.servers": sasl_bootstrap(source), **MIRROR_CREDENTIALS}
        )
        (await admin.add_topics_to_mirror(MIRROR, [TOPIC])).all()
        copy = destination.brokers[0].replica_manager.partition(TOPIC, 0)
        await wait_for(
            lambda: state() == "MIRRORING" and copy.log_end_offset == RECORDS,
            timeout=30,
            message="the first copy (an empty log asks the source nothing)",
        )
        (await admin.remove_topics_from_mirror(MIRROR, [TOPIC])).all()
        await wait_for(lambda: state() == "STOPPED", timeout=30, message="the topic STOPPED")
        kept = copy.log_end_offset

        (await admin.add_topics_to_mirror(MIRROR, [TOPIC])).all()
        await wait_for(
            lambda: "CLUSTER_AUTHORIZATION_FAILED" in caplog.text,
            timeout=30,
            message="the source refusing LastMirroredEpochs",
        )
        assert state() == "PREPARING"
        assert copy.log_end_offset == kept

        async with Admin(bootstrap=source.bootstrap) as source_admin:
            (await source_admin.create_acls([READ_CLUSTER])).all()
        await wait_for(
            lambda: state() == "MIRRORING" and copy.log_end_offset == RECORDS,
            timeout=30,
            message="mirroring again once READ on the source cluster is granted",
        )
