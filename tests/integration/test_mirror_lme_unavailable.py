"""A source whose ``__mirror_state`` coordinator is down answers LastMirroredEpochs with a
retriable error, not "no LME" (-1): -1 makes the asking destination discard its whole log,
so a failing-back cluster would lose everything to a transient outage. Only a cluster
without a ``__mirror_state`` topic (it never mirrored) knows no LME. The destination keeps
the partition in PREPARING, its log untouched, and cuts at the right offset once the
coordinator is back."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from helpers.mirrors import MIRROR, produce, produce_error_code
from helpers.replication import FAST, broker, stop

from mirrorsim.broker.metadata.models import PartitionAssignment
from mirrorsim.broker.server import Broker
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.client.cluster import ClusterClient, RequestSpec
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.messages.constants import MirrorApiKey
from mirrorsim.protocol.messages.mirror_state_records import MIRROR_STATE_TOPIC
from mirrorsim.protocol.records import RawBatch, decode_records

TOPIC = "orders"
NO_EPOCH = -1
NO_LEADER = -1
# One __mirror_state partition with one replica: stopping its leader leaves every mirror
# partition of the cluster without a coordinator.
SINGLE_COORDINATOR = {
    **FAST,
    "mirror.topic.num.partitions": 1,
    "mirror.topic.replication.factor": 1,
    "mirror.fetch.max.wait.ms": 50,
}
Fingerprint = tuple[int, int, int, bytes]


def _fingerprint(batch: RawBatch) -> Fingerprint:
    return batch.base_offset, batch.last_offset, batch.partition_leader_epoch, bytes(batch.data)


def _leader(cluster: Any, topic: str) -> Broker | None:
    """The running broker leading partition 0 of ``topic``, if any."""
    record = cluster.brokers[0].snapshot.topics.get(topic)
    if record is None:
        return None
    return next((b for b in cluster.brokers if b.broker_id == record.partitions[0].leader), None)


def _log(cluster: Any) -> list[Fingerprint] | None:
    """The leader's copy of partition 0, batch by batch (None while it has no leader)."""
    leader = _leader(cluster, TOPIC)
    if leader is None:
        return None
    return [_fingerprint(x) for x in leader.replica_manager.partition(TOPIC, 0).log.batches()]


def _state(cluster: Any) -> str | None:
    leader = _leader(cluster, TOPIC)
    status = None if leader is None else leader.mirrors.partitions.get((TOPIC, 0))
    return None if status is None else status.state.name


def _state_coordinator(cluster: Any) -> int:
    """The leader of ``__mirror_state-0`` as every running broker sees it (-1: none, or
    the brokers do not agree yet)."""
    leaders = {b.mirrors.state_topic.leader_of(0) for b in cluster.brokers}
    return leaders.pop() if len(leaders) == 1 else NO_LEADER


def _in_sync(cluster: Any, replicas: int) -> bool:
    record = cluster.brokers[0].snapshot.topics.get(TOPIC)
    if record is None:
        return False
    row = record.partitions[0]
    ends = {b.replica_manager.partition(TOPIC, 0).log_end_offset for b in cluster.brokers}
    return len(row.isr) == replicas and len(ends) == 1


async def _restart_at_its_address(cluster: Any, broker_id: int, port: int) -> None:
    """Start a stopped broker again on its data directory and its old port, as a restarted
    broker comes back: peers that knew its address reach it again without new metadata."""
    again = Broker(
        broker_id=broker_id,
        host="127.0.0.1",
        port=port,
        data_dir=cluster.spec.data_dir / f"broker-{broker_id}",
        metadata_url=cluster.spec.effective_metadata_url,
        configs=cluster.spec.configs,
    )
    await again.start()
    cluster.brokers.append(again)


async def _ask_last_mirrored_epochs(
    target: Broker, topic_id: uuid.UUID, partitions: list[int]
) -> list[tuple[int, int, int]]:
    """(partition, error code, LME) per partition, as ``target`` answers LastMirroredEpochs."""
    spec = RequestSpec(
        MirrorApiKey.LAST_MIRRORED_EPOCHS,
        {
            "mirror_name": MIRROR,
            "topics": [{"topic_id": topic_id, "topic_name": TOPIC, "partitions": partitions}],
        },
    )
    async with ClusterClient(target.bootstrap, client_id="lme-test") as client:
        response = await client.send_to_node(target.broker_id, spec)
    assert response.error_code == ErrorCode.NONE
    (topic,) = response.topics
    return [
        (int(p.partition_index), int(p.error_code), int(p.last_mirrored_epoch))
        for p in topic.partitions
    ]


async def test_a_cluster_that_never_mirrored_knows_no_lme(start_cluster: Any) -> None:
    source = await start_cluster("primary")
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic(TOPIC, 3, 1)])).all()
    first = source.brokers[0]
    assert not first.mirrors.state_topic.exists

    answer = await _ask_last_mirrored_epochs(first, first.snapshot.topics[TOPIC].topic_id, [0, 2])

    assert answer == [(0, ErrorCode.NONE, NO_EPOCH), (2, ErrorCode.NONE, NO_EPOCH)]


async def test_an_unavailable_state_coordinator_answers_a_retriable_error(
    start_cluster: Any, wait_for: Any
) -> None:
    source = await start_cluster("primary", brokers=2, configs=SINGLE_COORDINATOR)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic(TOPIC, 2, 2)])).all()
    await source.brokers[0].mirrors.state_topic.ensure_created()
    coordinator = await wait_for(
        lambda: _state_coordinator(source) if _state_coordinator(source) > 0 else None,
        message="__mirror_state-0 led, as every broker sees it",
    )
    survivor = next(b for b in source.brokers if b.broker_id != coordinator)
    topic_id = survivor.snapshot.topics[TOPIC].topic_id
    await wait_for(lambda: 0 in broker(source, coordinator).mirrors.state_topic.stores())
    assert await _ask_last_mirrored_epochs(survivor, topic_id, [0, 1]) == [
        (0, ErrorCode.NONE, NO_EPOCH),
        (1, ErrorCode.NONE, NO_EPOCH),
    ]

    port = broker(source, coordinator).port
    await stop(source, coordinator)
    await wait_for(
        lambda: survivor.mirrors.state_topic.leader_of(0) == NO_LEADER,
        message="__mirror_state-0 without a leader",
    )
    answer = await _ask_last_mirrored_epochs(survivor, topic_id, [0, 1])

    assert [p for p, _, _ in answer] == [0, 1]
    for _, code, _ in answer:
        assert code != ErrorCode.NONE
        assert ErrorCode(code).retriable, ErrorCode(code)
    assert MIRROR_STATE_TOPIC in survivor.snapshot.topics

    await _restart_at_its_address(source, coordinator, port)
    await wait_for(
        lambda: 0 in broker(source, coordinator).mirrors.state_topic.stores(),
        timeout=15,
        message="the coordinator back with __mirror_state-0 loaded",
    )
    await wait_for(lambda: survivor.mirrors.state_topic.leader_of(0) == coordinator, timeout=15)
    assert await _ask_last_mirrored_epochs(survivor, topic_id, [0, 1]) == [
        (0, ErrorCode.NONE, NO_EPOCH),
        (1, ErrorCode.NONE, NO_EPOCH),
    ]


def _served_last_mirrored_epochs(target: Broker) -> int:
    value = target.metrics.registry.get_sample_value(
        "kafka_network_request_metrics_requests_total",
        {"request": "LastMirroredEpochs", "version": "0"},
    )
    return int(value or 0)


async def _mirror(destination: Any, source: Any) -> None:
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, [TOPIC])).all()


async def _bump_leader_epoch(cluster: Any) -> None:
    """A new leader epoch on the old source, so the records written after it lie beyond
    the LME and the PREPARING cut (not the fetch's divergence check) removes them."""
    only = cluster.brokers[0]
    row = only.snapshot.topics[TOPIC].partitions[0]
    bumped = PartitionAssignment(0, row.replicas, row.leader, row.leader_epoch + 1, row.isr)
    await asyncio.to_thread(only.store.update_partition, TOPIC, bumped)
    await only.refresh_metadata()


def _record_truncations(target: Broker, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every truncation ``target`` makes of the mirror topic, as ("to" | "fully", offset)."""
    seen: list[tuple[str, int]] = []
    manager = target.replica_manager
    truncate_to = manager.truncate_to
    truncate_fully = manager.truncate_fully_and_start_at

    def recording_truncate_to(topic: str, partition: int, offset: int) -> bool:
        if topic == TOPIC:
            seen.append(("to", offset))
        return truncate_to(topic, partition, offset)

    def recording_truncate_fully(topic: str, partition: int, offset: int) -> None:
        if topic == TOPIC:
            seen.append(("fully", offset))
        truncate_fully(topic, partition, offset)

    monkeypatch.setattr(manager, "truncate_to", recording_truncate_to)
    monkeypatch.setattr(manager, "truncate_fully_and_start_at", recording_truncate_fully)
    return seen


async def test_failback_waits_in_preparing_while_the_sources_coordinator_is_down(
    start_cluster: Any,
    wait_for: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A mirrors to B, B fails over and takes writes, A writes a tail B never saw; A then
    fails back (mirrors from B) while B's only ``__mirror_state`` replica is down."""
    a = await start_cluster("primary", configs=SINGLE_COORDINATOR)
    b = await start_cluster(
        "backup", brokers=2, configs={**SINGLE_COORDINATOR, "default.replication.factor": 2}
    )
    async with Admin(bootstrap=a.bootstrap) as admin:
        (await admin.create_topics([NewTopic(TOPIC, 1, 1)])).all()
    await produce(a.bootstrap, TOPIC, 4, tag="shared")
    shared = _log(a)
    await _mirror(b, a)
    await wait_for(
        lambda: _state(b) == "MIRRORING" and _log(b) == shared and _in_sync(b, 2),
        timeout=30,
        message="B mirroring A on both replicas",
    )
    async with Admin(bootstrap=b.bootstrap) as admin:
        (await admin.remove_topics_from_mirror(MIRROR, [TOPIC])).all()
    await wait_for(lambda: _state(b) == "STOPPED", timeout=30, message="B failed over")
    await produce(b.bootstrap, TOPIC, 2, tag="written-on-b")
    await wait_for(lambda: _in_sync(b, 2), timeout=15, message="B's replicas in sync")
    await _bump_leader_epoch(a)
    await produce(a.bootstrap, TOPIC, 3, tag="lost-on-a")
    before_failback = _log(a)
    assert shared is not None and before_failback is not None
    lme_cut = shared[-1][1] + 1
    assert before_failback[: len(shared)] == shared and len(before_failback) > len(shared)

    coordinator = _state_coordinator(b)
    assert coordinator > 0
    port = broker(b, coordinator).port
    await stop(b, coordinator)
    await wait_for(
        lambda: (
            _state_coordinator(b) == NO_LEADER
            and b.brokers[0].mirrors.state_topic.leader_of(0) == NO_LEADER
            and _leader(b, TOPIC) is not None
        ),
        timeout=15,
        message="B without a state coordinator, its topic led by the other broker",
    )
    truncations = _record_truncations(a.brokers[0], monkeypatch)
    await _mirror(a, b)
    survivor = b.brokers[0]
    await wait_for(
        lambda: _state(a) == "PREPARING" and _served_last_mirrored_epochs(survivor) >= 2,
        timeout=30,
        message="A asking B for its LME again after a retriable answer",
    )
    assert _state(a) == "PREPARING"
    assert _log(a) == before_failback
    assert truncations == []

    await _restart_at_its_address(b, coordinator, port)
    on_b = _log(b)
    await wait_for(
        lambda: _state(a) == "MIRRORING" and _log(a) == on_b,
        timeout=30,
        message="A mirroring B once B's state coordinator is back",
    )
    assert truncations[0] == ("to", lme_cut)
    assert ("fully", 0) not in truncations
    assert on_b[: len(shared)] == shared


def _values(cluster: Any) -> list[bytes]:
    """The values of the leader's data records of partition 0, in offset order."""
    leader = _leader(cluster, TOPIC)
    assert leader is not None
    batches = leader.replica_manager.partition(TOPIC, 0).log.batches()
    return [r.value for b in batches if not b.is_control for r in decode_records(b)]


async def test_a_remove_while_preparing_stops_without_a_cut_and_keeps_acknowledged_writes(
    start_cluster: Any,
    wait_for: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A fails back (mirrors from B) while B's only ``__mirror_state`` replica is down, so
    A's partition waits in PREPARING; the operator removes the topic from A's mirror
    again. A goes through STOPPING to STOPPED with no LME cut, accepts produce only then,
    and the records it acknowledged are all still there once B's coordinator is back."""
    a = await start_cluster("primary", configs=SINGLE_COORDINATOR)
    b = await start_cluster(
        "backup", brokers=2, configs={**SINGLE_COORDINATOR, "default.replication.factor": 2}
    )
    async with Admin(bootstrap=a.bootstrap) as admin:
        (await admin.create_topics([NewTopic(TOPIC, 1, 1)])).all()
    await produce(a.bootstrap, TOPIC, 4, tag="shared")
    await _mirror(b, a)
    await wait_for(lambda: len(b.brokers[0].snapshot.brokers) == 2, message="B's brokers")
    await wait_for(
        lambda: _state(b) == "MIRRORING" and _log(b) == _log(a) and _in_sync(b, 2),
        timeout=30,
        message="B mirroring A on both replicas",
    )
    async with Admin(bootstrap=b.bootstrap) as admin:
        (await admin.remove_topics_from_mirror(MIRROR, [TOPIC])).all()
    await wait_for(lambda: _state(b) == "STOPPED", timeout=30, message="B failed over")
    await produce(b.bootstrap, TOPIC, 2, tag="written-on-b")
    await _bump_leader_epoch(a)
    await produce(a.bootstrap, TOPIC, 3, tag="beyond-the-lme-on-a")

    coordinator = _state_coordinator(b)
    assert coordinator > 0
    port = broker(b, coordinator).port
    await stop(b, coordinator)
    await wait_for(
        lambda: _state_coordinator(b) == NO_LEADER and _leader(b, TOPIC) is not None,
        timeout=15,
        message="B without a state coordinator, its topic led by the other broker",
    )
    truncations = _record_truncations(a.brokers[0], monkeypatch)
    await _mirror(a, b)
    await wait_for(
        lambda: _state(a) == "PREPARING" and _served_last_mirrored_epochs(b.brokers[0]) >= 2,
        timeout=30,
        message="A preparing, asking B for its LME again and again",
    )
    kept = _values(a)
    end_before_remove = a.brokers[0].replica_manager.partition(TOPIC, 0).log_end_offset

    async with Admin(bootstrap=a.bootstrap) as admin:
        (await admin.remove_topics_from_mirror(MIRROR, [TOPIC])).all()

    async def writable() -> bool:
        return await produce_error_code(a.bootstrap, TOPIC) == ErrorCode.NONE

    await wait_for(writable, timeout=30, message="A writable again")
    state_when_writable = _state(a)
    await produce(a.bootstrap, TOPIC, 10, tag="after-remove")
    acknowledged = [b"local", *(f"after-remove-{i}".encode() for i in range(10))]

    await _restart_at_its_address(b, coordinator, port)
    await wait_for(
        lambda: 0 in broker(b, coordinator).mirrors.state_topic.stores(),
        timeout=15,
        message="B's state coordinator back",
    )
    await wait_for(lambda: _state(a) == "STOPPED", timeout=30, message="A stopped")

    assert _values(a) == kept + acknowledged
    assert all(offset >= end_before_remove for _, offset in truncations), truncations
    assert state_when_writable == "STOPPED"
