"""The MirrorMetadataManager's machinery: periodic jobs, source connections, which broker
syncs a mirror, paused topics and the error metrics."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from helpers.metadata_sync import (
    DESTINATION_CONFIGS,
    SOURCE_CONFIGS,
    manager_of,
    mirror_topic,
    set_source_config,
    topic_configs,
)
from helpers.mirrors import MIRROR

from mirrorsim.broker.metadata.mirror_configs import FIXED_MIRROR_CONFIG_NAMES, forces_reconnect
from mirrorsim.broker.metadata.store import MetadataStoreUnavailable
from mirrorsim.broker.metrics.mirror import SyncError
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import TopicPartition
from mirrorsim.coordinator.periodic_jobs import PeriodicJob
from mirrorsim.coordinator.source_pool import SourcePool, connection_settings
from mirrorsim.coordinator.sync.acls import MIRROR_ACL_INCLUDE
from mirrorsim.coordinator.sync.groups import MIRROR_GROUPS_INCLUDE
from mirrorsim.coordinator.sync.topics import MIRROR_TOPIC_PROPERTIES_EXCLUDE

NEVER_S = 3600.0


async def test_a_failing_job_counts_its_errors_and_keeps_running() -> None:
    errors: list[BaseException] = []
    outcomes = iter([RuntimeError("source unreachable"), "second", "third"])

    async def work() -> str:
        outcome = next(outcomes)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    job = PeriodicJob("sync", lambda: NEVER_S, work, on_error=errors.append)
    job.start()
    try:
        with pytest.raises(RuntimeError, match="source unreachable"):
            await job.run_now()
        assert await job.run_now() == "second"
        assert job.running
        assert (job.cycles, job.failures, [str(e) for e in errors]) == (
            2,
            1,
            ["source unreachable"],
        )
    finally:
        await job.stop()
    assert not job.running


async def test_an_io_failure_is_logged_in_one_line_and_a_bug_with_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An unreachable store or a process out of descriptors is the environment, not a
    defect: a line per cycle says so, where a traceback would bury the other logs."""
    outcomes = iter(
        [MetadataStoreUnavailable("metadata store sqlite:///m.db: unable to open"), KeyError("bug")]
    )

    async def work() -> None:
        raise next(outcomes)

    job = PeriodicJob("sync", lambda: NEVER_S, work)
    job.start()
    try:
        with caplog.at_level("WARNING", logger="mirrorsim.coordinator.periodic_jobs"):
            for _ in range(2):
                with pytest.raises((MetadataStoreUnavailable, KeyError)):
                    await job.run_now()
    finally:
        await job.stop()
    io_failure, bug = caplog.records
    assert (io_failure.levelname, io_failure.exc_info) == ("WARNING", None)
    assert "unable to open" in io_failure.getMessage()
    assert bug.levelname == "ERROR" and bug.exc_info is not None


async def test_a_job_runs_on_its_interval_without_being_asked() -> None:
    ran = asyncio.Event()

    async def work() -> None:
        ran.set()

    job = PeriodicJob("sync", lambda: 0.01, work)
    job.start()
    try:
        await asyncio.wait_for(ran.wait(), timeout=5)
    finally:
        await job.stop()


async def test_run_now_does_not_count_a_cycle_already_running() -> None:
    started, release = asyncio.Event(), asyncio.Event()
    cycle = 0

    async def work() -> int:
        nonlocal cycle
        cycle += 1
        if cycle == 1:
            started.set()
            await release.wait()
        return cycle

    job = PeriodicJob("sync", lambda: 0.0 if cycle == 0 else NEVER_S, work)
    job.start()
    try:
        await asyncio.wait_for(started.wait(), timeout=5)
        waiting = job.run_now()
        release.set()
        assert await asyncio.wait_for(waiting, timeout=5) == 2
    finally:
        await job.stop()


async def test_stop_cancels_a_running_cycle_and_its_callers() -> None:
    blocked = asyncio.Event()

    async def work() -> None:
        blocked.set()
        await asyncio.Event().wait()

    job = PeriodicJob("sync", lambda: NEVER_S, work)
    job.start()
    caller = job.run_now()
    await asyncio.wait_for(blocked.wait(), timeout=5)
    await job.stop()
    with pytest.raises(asyncio.CancelledError):
        await caller


async def test_stop_ends_a_job_whose_cycle_swallowed_the_cancellation() -> None:
    """As asyncio.wait_for on Python 3.11 can when its inner future completes at once."""
    blocked, swallowed = asyncio.Event(), asyncio.Event()

    async def work() -> None:
        blocked.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            swallowed.set()

    job = PeriodicJob("sync", lambda: 0.0, work)
    job.start()
    await asyncio.wait_for(blocked.wait(), timeout=5)
    await asyncio.wait_for(job.stop(), timeout=10)
    assert swallowed.is_set()
    assert not job.running


def test_only_connection_settings_decide_the_source_connection() -> None:
    config = {
        "bootstrap.servers": "a:9092",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "ssl.ca.location": "/ca.pem",
        "mirror.groups.include": "app-.*",
        "mirror.acl.include": "*",
    }
    assert connection_settings(config) == {
        "bootstrap.servers": "a:9092",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "ssl.ca.location": "/ca.pem",
    }


def test_every_mirror_config_either_reconnects_or_filters_the_sync() -> None:
    """The mirror config table is the one place that says what a name does: each fixed
    name reopens the source connection or is one of the sync filters, never both."""
    filters = {MIRROR_TOPIC_PROPERTIES_EXCLUDE, MIRROR_GROUPS_INCLUDE, MIRROR_ACL_INCLUDE}
    for name in FIXED_MIRROR_CONFIG_NAMES:
        assert forces_reconnect(name) != (name in filters), name
    assert forces_reconnect("ssl.truststore.location")
    assert forces_reconnect("sasl.jaas.config")


async def test_the_source_client_is_kept_until_its_connection_settings_change(
    start_cluster: Any,
) -> None:
    first = await start_cluster("primary")
    second = await start_cluster("other")
    pool = SourcePool(broker_id=1)
    try:
        opened = await pool.admin("m", {"bootstrap.servers": first.bootstrap})
        same = await pool.admin(
            "m", {"bootstrap.servers": first.bootstrap, "mirror.groups.include": "x"}
        )
        moved = await pool.admin("m", {"bootstrap.servers": second.bootstrap})
        assert same is opened
        assert moved is not opened
        assert (await moved.describe_cluster()).cluster_id == second.cluster_id
    finally:
        await pool.close_all()


async def test_exactly_one_destination_broker_syncs_a_mirror(
    start_cluster: Any, wait_for: Any
) -> None:
    source = await start_cluster("primary", configs=SOURCE_CONFIGS)
    destination = await start_cluster("backup", brokers=3, configs=DESTINATION_CONFIGS)
    await mirror_topic(source.bootstrap, destination, "orders")
    managers = [b.mirror_metadata for b in destination.brokers]
    for manager in managers:
        await manager.reconcile()
    coordinators = {manager.coordinator_of(MIRROR) for manager in managers}
    assert len(coordinators) == 1
    syncing = [
        b.broker_id
        for b, m in zip(destination.brokers, managers, strict=True)
        if m.coordinated_mirrors() == [MIRROR]
    ]
    assert syncing == list(coordinators)
    others = [m for m in managers if m.coordinated_mirrors() == []]
    assert len(others) == 2
    with pytest.raises(LookupError):
        await others[0].refresh_now(MIRROR)


async def test_a_paused_topic_gets_no_metadata_sync(start_cluster: Any) -> None:
    source = await start_cluster("primary", configs=SOURCE_CONFIGS)
    destination = await start_cluster("backup", configs=DESTINATION_CONFIGS)
    await mirror_topic(source.bootstrap, destination, "orders")
    async with Admin(bootstrap=destination.bootstrap) as admin:
        (await admin.pause_mirror_topics(MIRROR, ["orders"])).all()
    await set_source_config(source.bootstrap, "orders", "retention.ms", "7200000")
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.alter_consumer_group_offsets("app", {TopicPartition("orders", 0): 3})).all()

    report = await manager_of(destination).refresh_now(MIRROR)

    assert (report.topic_operations, report.group_commits) == ([], [])
    assert "retention.ms" not in topic_configs(destination, "orders")


async def test_a_bad_filter_config_is_counted_as_a_metadata_refresh_error(
    start_cluster: Any,
) -> None:
    source = await start_cluster("primary", configs=SOURCE_CONFIGS)
    destination = await start_cluster("backup", configs=DESTINATION_CONFIGS)
    await mirror_topic(source.bootstrap, destination, "orders")
    broker = destination.brokers[0]
    await asyncio.to_thread(
        broker.store.set_mirror_configs,
        MIRROR,
        {"bootstrap.servers": source.bootstrap, "mirror.acl.include": "NOT_A_TYPE"},
    )
    manager = manager_of(destination)
    before = manager.error_counts[SyncError.METADATA_REFRESH]

    with pytest.raises(ValueError, match=r"mirror\.acl\.include"):
        await manager.refresh_now(MIRROR)

    assert manager.error_counts[SyncError.METADATA_REFRESH] > before
    assert manager.coordinated_mirrors() == [MIRROR]
