"""A mirror topic accepts produce requests only once its partition is STOPPED.

RemoveTopicsFromMirror only sets the ``.removed`` suffix; the leader then runs the STOPPING
sequence (fetcher removed, LSO cut, LME, leader epoch bump, MIRROR_PID_RESET). A record
acknowledged before that sequence ends would lie below the MIRROR_PID_RESET batch, in the
mirrored epoch, and could be cut by it. The tests hold the destination leader's
coordinator at a chosen step (wrapping one of its methods), so the window between the
config and the state is as wide as the test needs, while a real client keeps producing.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError as ClientError
from helpers.mirrors import (
    MIRROR,
    MIRROR_CONFIGS,
    batches_of,
    broker_of,
    mirror_state,
    mirrored_up_to,
    produce,
    produce_error_code,
)
from helpers.replication import restart, stop
from helpers.write_gate import Hold

from mirrorsim.broker.config import MIRROR_NAME
from mirrorsim.broker.metadata.controller import MetadataController
from mirrorsim.broker.replica import ReplicaManager
from mirrorsim.broker.replica.partition_state import PartitionState
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.client.cluster import ClusterClient, RequestSpec
from mirrorsim.coordinator.mirror_coordinator import MirrorCoordinator
from mirrorsim.coordinator.state_machine import MirrorEvent
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.messages import MirrorApiKey
from mirrorsim.protocol.records import MirrorPidReset, RawBatch, decode_control_batch
from mirrorsim.protocol.uuids import ZERO_UUID

TOPIC = "orders"
ACKS_AFTER_STOP = 20
ATTEMPTS_WHILE_HELD = 10


@dataclass
class ProduceLog:
    acked: list[int] = field(default_factory=list)
    refused: int = 0

    @property
    def attempts(self) -> int:
        return len(self.acked) + self.refused


async def _produce_continuously(bootstrap: str, done: asyncio.Event, seen: ProduceLog) -> None:
    """One record at a time, acks=all, to partition 0, until ``done``; every refusal is
    counted and the next record sent, as an application that retries would."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=0)
    await producer.start()
    try:
        index = 0
        while not done.is_set():
            try:
                sent = await producer.send_and_wait(TOPIC, f"local-{index}".encode(), partition=0)
            except ClientError:
                seen.refused += 1
                await asyncio.sleep(0.01)
            else:
                seen.acked.append(sent.offset)
            index += 1
    finally:
        await producer.stop()


async def _add_to_a_mirror(start_cluster: Any, destination_brokers: int = 1) -> tuple[Any, Any]:
    source = await start_cluster("primary", configs=MIRROR_CONFIGS)
    destination = await start_cluster("backup", brokers=destination_brokers, configs=MIRROR_CONFIGS)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic(TOPIC, 1, 1)])).all()
    await produce(source.bootstrap, TOPIC, 5, tag="mirrored")
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, [TOPIC])).all()
    return source, destination


async def _mirrored_topic(start_cluster: Any, wait_for: Any) -> tuple[Any, Any]:
    source, destination = await _add_to_a_mirror(start_cluster)
    await wait_for(lambda: mirrored_up_to(source, destination, TOPIC, 0), timeout=20)
    return source, destination


async def _remove(destination: Any) -> None:
    async with Admin(bootstrap=destination.bootstrap) as admin:
        (await admin.remove_topics_from_mirror(MIRROR, [TOPIC])).all()


def _pid_reset(batches: list[RawBatch]) -> RawBatch:
    (reset,) = [
        b for b in batches if b.is_control and isinstance(decode_control_batch(b), MirrorPidReset)
    ]
    return reset


def _assert_written_after_the_reset(batches: list[RawBatch], acked: list[int]) -> None:
    """Every acknowledged offset lies after MIRROR_PID_RESET, in its (new) leader epoch."""
    reset = _pid_reset(batches)
    by_offset = {offset: b for b in batches for offset in range(b.base_offset, b.last_offset + 1)}
    assert acked, "no record was acknowledged"
    assert min(acked) > reset.last_offset, (min(acked), reset.last_offset)
    assert {by_offset[offset].partition_leader_epoch for offset in acked} == {
        reset.partition_leader_epoch
    }
    mirrored = [b.partition_leader_epoch for b in batches if b.last_offset < reset.base_offset]
    assert mirrored and reset.partition_leader_epoch > max(mirrored)


async def test_a_producer_during_failover_is_acknowledged_only_after_the_pid_reset(
    start_cluster: Any, wait_for: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The leader sees ``.removed`` but is held before STOPPING: every produce is refused
    (READ_ONLY_TOPIC) until the partition is STOPPED."""
    _, destination = await _mirrored_topic(start_cluster, wait_for)
    coordinator = broker_of(destination).mirrors
    hold = Hold()
    transition = coordinator._transition

    async def held_transition(status: Any, event: MirrorEvent) -> None:
        if event is MirrorEvent.STOP_REQUESTED:
            await hold.wait()
        await transition(status, event)

    monkeypatch.setattr(coordinator, "_transition", held_transition)
    done = asyncio.Event()
    seen = ProduceLog()
    producing = asyncio.create_task(_produce_continuously(destination.bootstrap, done, seen))
    try:
        await wait_for(lambda: seen.refused > 0, timeout=20, message="produce refused")
        await _remove(destination)
        await wait_for(lambda: hold.arrivals == 1, timeout=20, message="leader saw .removed")
        held_from = seen.attempts
        await wait_for(
            lambda: seen.attempts >= held_from + ATTEMPTS_WHILE_HELD,
            timeout=20,
            message="produce attempts while the leader is held before STOPPING",
        )
        assert seen.acked == []
        assert mirror_state(destination, TOPIC, 0) == "MIRRORING"

        hold.release.set()
        await wait_for(lambda: mirror_state(destination, TOPIC, 0) == "STOPPED", timeout=20)
        await wait_for(lambda: len(seen.acked) >= ACKS_AFTER_STOP, timeout=20)
    finally:
        done.set()
        await producing

    _assert_written_after_the_reset(batches_of(destination, TOPIC, 0), seen.acked)


async def test_a_restarted_leader_resuming_stopping_keeps_the_topic_read_only(
    start_cluster: Any, wait_for: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The leader stores STOPPING and is stopped before the sequence ends; restarted, it
    refuses produce while the resumed sequence runs, and accepts it once STOPPED."""
    source, destination = await _mirrored_topic(start_cluster, wait_for)
    hold = Hold()
    stopping_sequence = MirrorCoordinator._stop

    async def held_stop(self: MirrorCoordinator, status: Any, assignment: Any) -> None:
        await hold.wait()
        await stopping_sequence(self, status, assignment)

    monkeypatch.setattr(MirrorCoordinator, "_stop", held_stop)
    await _remove(destination)
    await wait_for(lambda: hold.arrivals == 1, timeout=20, message="STOPPING stored and held")
    assert mirror_state(destination, TOPIC, 0) == "STOPPING"
    broker_id = broker_of(destination).broker_id
    await stop(destination, broker_id)

    again = await restart(destination, broker_id)
    await wait_for(lambda: hold.arrivals == 2, timeout=20, message="STOPPING resumed and held")
    assert mirror_state(destination, TOPIC, 0) == "STOPPING"
    assert await produce_error_code(again.bootstrap, TOPIC) == ErrorCode.READ_ONLY_TOPIC

    hold.release.set()
    await wait_for(lambda: mirror_state(destination, TOPIC, 0) == "STOPPED", timeout=20)
    assert await produce_error_code(again.bootstrap, TOPIC) == ErrorCode.NONE
    batches = batches_of(destination, TOPIC, 0)
    _assert_written_after_the_reset(batches, [batches[-1].base_offset])
    assert decode_control_batch(_pid_reset(batches)) == MirrorPidReset(source.cluster_id)


async def test_a_mirror_topic_created_by_an_add_is_read_only_from_its_first_record(
    start_cluster: Any, wait_for: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AddTopicsToMirror creates the destination topic and then tags every added topic
    with ``mirror.name``. Created plain, the topic took produce until the tag landed;
    created with the tag, it refuses produce while the tagging step is held."""
    source = await start_cluster("primary", configs=MIRROR_CONFIGS)
    destination = await start_cluster("backup", configs=MIRROR_CONFIGS)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic(TOPIC, 1, 1)])).all()
    hold = Hold()
    tagging = MetadataController.update_configs_of_topics

    async def held_tagging(self: MetadataController, configs: Any) -> Any:
        await hold.wait()
        return await tagging(self, configs)

    monkeypatch.setattr(MetadataController, "update_configs_of_topics", held_tagging)
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        adding = asyncio.create_task(admin.add_topics_to_mirror(MIRROR, [TOPIC]))
        await wait_for(lambda: hold.arrivals == 1, timeout=20, message="tagging held")
        await broker_of(destination).refresh_metadata()
        code = await produce_error_code(destination.bootstrap, TOPIC)
        hold.release.set()
        (await adding).all()
    assert code == ErrorCode.READ_ONLY_TOPIC
    assert batches_of(destination, TOPIC, 0) == []


async def test_a_re_add_is_answered_only_once_the_leader_refuses_produce(
    start_cluster: Any, wait_for: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed over, the topic takes produce; re-added through the broker that does not lead
    it, the add is answered only once the leader has seen ``mirror.name`` and closed the
    partition. The leader's refresh is held after it read the add: a record it takes then
    is acknowledged before the answer (the re-add's LME cut may remove it), and every
    produce after the answer is refused."""
    _, destination = await _add_to_a_mirror(start_cluster, destination_brokers=2)
    first = destination.brokers[0]
    await wait_for(lambda: TOPIC in first.snapshot.topics, timeout=20)
    leader_id = first.snapshot.topics[TOPIC].partitions[0].leader
    (leader,) = [b for b in destination.brokers if b.broker_id == leader_id]
    (other,) = [b for b in destination.brokers if b.broker_id != leader_id]

    def state_at_leader() -> str | None:
        status = leader.mirrors.partitions.get((TOPIC, 0))
        return None if status is None else status.state.name

    await wait_for(lambda: state_at_leader() == "MIRRORING", timeout=20)
    await _remove(destination)
    await wait_for(lambda: state_at_leader() == "STOPPED", timeout=20)
    hold = Hold()
    apply_state = ReplicaManager.apply_partition_state

    async def held_apply(self: ReplicaManager, state: PartitionState) -> None:
        if self is leader.replica_manager and state.configs.get(MIRROR_NAME) == MIRROR:
            await hold.wait()
        await apply_state(self, state)

    monkeypatch.setattr(ReplicaManager, "apply_partition_state", held_apply)
    producer = AIOKafkaProducer(bootstrap_servers=destination.bootstrap, acks=1, linger_ms=0)
    await producer.start()
    try:
        before = await producer.send_and_wait(TOPIC, b"before-the-add", partition=0)
        add = RequestSpec(
            MirrorApiKey.ADD_TOPICS_TO_MIRROR,
            {"mirror_name": MIRROR, "topics": [{"topic_id": ZERO_UUID, "topic_name": TOPIC}]},
        )
        async with ClusterClient(destination.bootstrap, client_id="re-add") as client:
            adding = asyncio.create_task(client.send_to_node(other.broker_id, add))
            await wait_for(lambda: hold.arrivals >= 1, timeout=20, message="leader read the add")
            during = await producer.send_and_wait(TOPIC, b"while-held", partition=0)
            assert not adding.done()
            hold.release.set()
            answer = await adding
        assert [(t.name, t.error_code) for t in answer.topics] == [(TOPIC, ErrorCode.NONE)]
        refused = await produce_error_code(destination.bootstrap, TOPIC, node=leader_id)
        assert refused == ErrorCode.READ_ONLY_TOPIC
    finally:
        await producer.stop()
    assert during.offset == before.offset + 1
    assert state_at_leader() not in ("STOPPED", None)
