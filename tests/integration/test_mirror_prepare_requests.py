"""PREPARING asks the source for last mirrored epochs only when there is something to cut,
and asks for all the partitions preparing together in one LastMirroredEpochs request;
STOPPING does not walk the log."""

from __future__ import annotations

from typing import Any

import pytest
from helpers.mirrors import (
    MIRROR,
    MIRROR_CONFIGS,
    batches_of,
    broker_of,
    mirror_state,
    partition_log,
    produce,
)

from mirrorsim.broker.log import PartitionLog
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic

TOPIC = "orders"
PARTITIONS = 16


def served_last_mirrored_epochs(cluster: Any) -> int:
    value = broker_of(cluster).metrics.registry.get_sample_value(
        "kafka_network_request_metrics_requests_total",
        {"request": "LastMirroredEpochs", "version": "0"},
    )
    return int(value or 0)


def every_partition(cluster: Any, state: str) -> bool:
    return all(mirror_state(cluster, TOPIC, p) == state for p in range(PARTITIONS))


def same_logs(a: Any, b: Any) -> bool:
    return all(
        [x.data for x in batches_of(a, TOPIC, p)] == [x.data for x in batches_of(b, TOPIC, p)]
        for p in range(PARTITIONS)
    )


async def test_new_mirror_skips_the_question_and_failback_asks_once(
    start_cluster: Any, wait_for: Any
) -> None:
    a = await start_cluster("primary", configs=MIRROR_CONFIGS)
    b = await start_cluster("backup", configs=MIRROR_CONFIGS)
    async with Admin(bootstrap=a.bootstrap) as admin:
        (await admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])).all()
    await produce(a.bootstrap, TOPIC, 4 * PARTITIONS, partitions=PARTITIONS)

    async with Admin(bootstrap=b.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": a.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, [TOPIC])).all()
        await wait_for(lambda: every_partition(b, "MIRRORING") and same_logs(a, b), timeout=20)
        # Every destination log was empty: nothing to cut, so nothing was asked.
        assert served_last_mirrored_epochs(a) == 0

        (await admin.remove_topics_from_mirror(MIRROR, [TOPIC])).all()
        await wait_for(lambda: every_partition(b, "STOPPED"), timeout=20)

    async with Admin(bootstrap=a.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": b.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, [TOPIC])).all()
        await wait_for(lambda: every_partition(a, "MIRRORING") and same_logs(a, b), timeout=20)
    # Sixteen partitions with records, each needing its LME: the questions travel
    # together (a partition entering PREPARING while a request is out joins the next one).
    asked = served_last_mirrored_epochs(b)
    assert 1 <= asked <= 3


async def test_failover_of_a_many_segment_log_reads_none_of_its_batches(
    start_cluster: Any, wait_for: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stop cut comes from producer state and the ``.txnindex``: a failover that
    walked the mirror topic's batches fails here."""
    a = await start_cluster("primary", configs=MIRROR_CONFIGS)
    b = await start_cluster("backup", configs=MIRROR_CONFIGS)
    async with Admin(bootstrap=a.bootstrap) as admin:
        (await admin.create_topics([NewTopic(TOPIC, 1, 1, {"segment.bytes": "1024"})])).all()
    for round_ in range(12):
        await produce(a.bootstrap, TOPIC, 25, tag=f"r{round_}", partitions=1)
    async with Admin(bootstrap=b.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": a.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, [TOPIC])).all()
        await wait_for(
            lambda: (
                mirror_state(b, TOPIC, 0) == "MIRRORING"
                and partition_log(b, TOPIC, 0).log_end_offset == 300
            ),
            timeout=20,
        )
        assert len(partition_log(b, TOPIC, 0).segments) > 5
        walk = PartitionLog.batches

        def refuse_mirror_topic(log: PartitionLog, start_offset: int | None = None) -> Any:
            assert not log.dir.name.startswith(TOPIC), "the failover read the mirrored log"
            return walk(log, start_offset)

        monkeypatch.setattr(PartitionLog, "batches", refuse_mirror_topic)
        (await admin.remove_topics_from_mirror(MIRROR, [TOPIC])).all()
        await wait_for(lambda: mirror_state(b, TOPIC, 0) == "STOPPED", timeout=20)
