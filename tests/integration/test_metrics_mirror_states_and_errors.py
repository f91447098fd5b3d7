"""The partition-state gauges and the metadata sync error counters, scraped over HTTP while
real failures happen: the source's ACLs give the mirror's principal READ on topics only.

So the source refuses DescribeAcls (no DESCRIBE on the cluster: an ACL sync error),
DescribeConfigs on its topics (no DESCRIBE_CONFIGS: a topic configuration sync error) and
LastMirroredEpochs (no READ on the cluster), which holds a re-added topic in PREPARING.
Holding the STOPPING sequence at its start (as ``test_mirror_write_gate.py`` does) keeps
the topic in STOPPING once it is removed. Each scrape passes ``promtool check metrics``.
The held states also show what a second add answers: TOPIC_ALREADY_IN_MIRROR while the
mirror prepares the topic, INVALID_REQUEST while it is still removing it.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers.metrics import scrape
from helpers.mirror_credentials import MIRROR_CREDENTIALS, SECURED_SOURCE
from helpers.mirrors import MIRROR, produce
from helpers.promtool import promtool_problems
from helpers.sasl import sasl_bootstrap
from helpers.write_gate import Hold

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import AclBinding, AclOperation, NewTopic, ResourceType
from mirrorsim.coordinator.mirror_coordinator import MirrorCoordinator
from mirrorsim.protocol.errors import ErrorCode

TOPIC = "orders"
RECORDS = 4
DESTINATION = {
    "mirror.topic.num.partitions": 1,
    "mirror.fetch.max.wait.ms": 50,
    "mirror.metadata.refresh.interval.ms": 200,
}
STATES = ("mirroring", "preparing", "stopping", "stopped", "failed", "paused")


def gauges(samples: dict[Any, float]) -> dict[str, float]:
    return {s: samples[(f"kafka_server_mirror_{s}_partition_state", ())] for s in STATES}


def only(state: str) -> dict[str, float]:
    return {s: float(s == state) for s in STATES}


def sync_errors(samples: dict[Any, float], kind: str) -> float:
    return samples[(f"kafka_server_mirror_{kind}_total", ())]


async def test_state_gauges_and_sync_errors_follow_real_failures(
    start_cluster: Any, wait_for: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = await start_cluster("primary", configs=SECURED_SOURCE)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic(TOPIC, 1, 1)])).all()
        read_topics = AclBinding(ResourceType.TOPIC, "*", "User:mirror", AclOperation.READ)
        (await admin.create_acls([read_topics])).all()
    await produce(source.bootstrap, TOPIC, RECORDS)
    destination = await start_cluster("backup", configs=DESTINATION)
    (broker,) = destination.brokers
    port = broker.metrics.port
    copy_of = broker.replica_manager

    async def scraped() -> dict[Any, float]:
        return await scrape(port)

    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(
            MIRROR, {"bootstrap.servers": sasl_bootstrap(source), **MIRROR_CREDENTIALS}
        )
        (await admin.add_topics_to_mirror(MIRROR, [TOPIC])).all()

        async def mirroring_with_errors() -> dict[Any, float] | None:
            samples = await scraped()
            ok = (
                gauges(samples) == only("mirroring")
                and copy_of.partition(TOPIC, 0).log_end_offset == RECORDS
                and sync_errors(samples, "acl_sync_error") >= 1
                and sync_errors(samples, "topic_config_metadata_sync_error") >= 1
            )
            return samples if ok else None

        samples = await wait_for(
            mirroring_with_errors, timeout=30, message="mirroring, with both sync errors counted"
        )
        assert sync_errors(samples, "consumer_group_offset_sync_error") == 0
        assert await promtool_problems(port) == ""

        (await admin.remove_topics_from_mirror(MIRROR, [TOPIC])).all()
        await wait_for(lambda: _gauges_are(scraped, only("stopped")), timeout=30, message="STOPPED")
        (await admin.add_topics_to_mirror(MIRROR, [TOPIC])).all()
        await wait_for(
            lambda: _gauges_are(scraped, only("preparing")),
            timeout=30,
            message="PREPARING, held by the refused LastMirroredEpochs",
        )
        assert await promtool_problems(port) == ""
        retried = await admin.add_topics_to_mirror(MIRROR, [TOPIC])
        assert retried[TOPIC].code == ErrorCode.TOPIC_ALREADY_IN_MIRROR

        hold = Hold()
        stopping_sequence = MirrorCoordinator._stop

        async def held_stop(self: MirrorCoordinator, status: Any, assignment: Any) -> None:
            await hold.wait()
            await stopping_sequence(self, status, assignment)

        monkeypatch.setattr(MirrorCoordinator, "_stop", held_stop)
        (await admin.remove_topics_from_mirror(MIRROR, [TOPIC])).all()
        await wait_for(lambda: hold.arrivals == 1, timeout=30, message="STOPPING held")
        assert gauges(await scraped()) == only("stopping")
        while_removing = await admin.add_topics_to_mirror(MIRROR, [TOPIC])
        assert while_removing[TOPIC].code == ErrorCode.INVALID_REQUEST
        assert await promtool_problems(port) == ""
        hold.release.set()
        await wait_for(
            lambda: _gauges_are(scraped, only("stopped")), timeout=30, message="STOPPED again"
        )


async def _gauges_are(scraped: Any, expected: dict[str, float]) -> bool:
    return gauges(await scraped()) == expected
