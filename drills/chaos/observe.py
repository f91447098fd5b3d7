"""Reading a cluster as the chaos invariants and faults need it: a topic's mirror state, its
log end, its log decoded into (offset, value, leader epoch) with the MIRROR_PID_RESET
batches marked, and which broker coordinates a partition's mirror state."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import OffsetSpec, TopicPartition
from mirrorsim.coordinator.mirror_state_store import mirror_state_partition
from mirrorsim.drills.clusters import DrillCluster
from mirrorsim.protocol.messages.mirror_state_records import MIRROR_STATE_TOPIC
from mirrorsim.protocol.records import (
    MirrorPidReset,
    RawBatch,
    decode_control_batch,
    decode_records,
)

PARTITION = 0
OBSERVER_ADMIN = {"default.api.timeout.ms": "3000", "request.timeout.ms": "2000"}


@dataclass(frozen=True, slots=True)
class LogRecords:
    """One partition's log: values by offset, each batch's leader epoch, the
    MIRROR_PID_RESET batches (base offset, epoch) and the raw batches."""

    values: dict[int, str]
    epochs: dict[int, int]
    pid_resets: tuple[tuple[int, int], ...]
    batches: tuple[RawBatch, ...]
    log_end: int

    def epoch_at(self, offset: int) -> int | None:
        """The leader epoch of the batch holding ``offset``."""
        for batch in self.batches:
            if batch.base_offset <= offset <= batch.last_offset:
                return batch.partition_leader_epoch
        return None


def batch_digest(batch: RawBatch) -> bytes:
    """A batch's bytes, short enough to keep for every batch of a schedule's logs."""
    return hashlib.blake2b(batch.data, digest_size=16).digest()


def batch_digests(log: LogRecords) -> tuple[tuple[int, bytes], ...]:
    """(base offset, digest) of every batch of ``log``."""
    return tuple((batch.base_offset, batch_digest(batch)) for batch in log.batches)


OFFLINE = "OFFLINE"
"""What ``mirror_state`` reports when no mirror reports the partition because it has no
leader to report it: whether a mirror holds it cannot be told then."""
UNANSWERED = "UNANSWERED"
"""What a caller records when the cluster could not be asked at all."""


async def mirror_state(cluster: DrillCluster, topic: str) -> str | None:
    """The state DescribeMirrors reports for ``topic``'s partition 0 on ``cluster``, in
    any mirror (None: no mirror holds it; ``OFFLINE``: the partition has no leader, and
    only its leader reports it)."""
    async with Admin(bootstrap=cluster.bootstrap, config=OBSERVER_ADMIN) as admin:
        described = await admin.describe_mirrors()
        for mirror in described.values():
            for p in mirror.partitions:
                if p.topic == topic and p.partition == PARTITION:
                    return p.state
        metadata = await admin.cluster.refresh_metadata([topic])
    info = metadata.topics.get(topic)
    partition = None if info is None else info.partitions.get(PARTITION)
    if partition is not None and partition.leader_id < 0:
        return OFFLINE
    return None


async def state_coordinator(cluster: DrillCluster, mirror: str, topic: str) -> int | None:
    """The broker leading the ``__mirror_state`` partition that holds partition 0 of
    ``topic`` in ``mirror`` on ``cluster``: the one that answers LastMirroredEpochs for it
    when another cluster mirrors from this one. None when the cluster has no such
    partition (it never was a mirror's destination), no copy of ``topic``, or no leader
    for it."""
    async with Admin(bootstrap=cluster.bootstrap, config=OBSERVER_ADMIN) as admin:
        metadata = await admin.cluster.refresh_metadata([topic, MIRROR_STATE_TOPIC])
    data, states = metadata.topics.get(topic), metadata.topics.get(MIRROR_STATE_TOPIC)
    if data is None or data.topic_id is None or states is None or not states.partitions:
        return None
    index = mirror_state_partition(mirror, data.topic_id, PARTITION, len(states.partitions))
    coordinator = states.partitions.get(index)
    return None if coordinator is None or coordinator.leader_id < 0 else coordinator.leader_id


async def log_end(cluster: DrillCluster, topic: str) -> int:
    tp = TopicPartition(topic, PARTITION)
    async with Admin(bootstrap=cluster.bootstrap, config=OBSERVER_ADMIN) as admin:
        return (await admin.list_offsets({tp: OffsetSpec.LATEST}))[tp].offset


async def read_log(cluster: DrillCluster, topic: str) -> LogRecords:
    view = await cluster.log_view(topic, PARTITION)
    values: dict[int, str] = {}
    epochs: dict[int, int] = {}
    resets: list[tuple[int, int]] = []
    for batch in view.batches:
        epochs[batch.base_offset] = batch.partition_leader_epoch
        if batch.is_control:
            if isinstance(decode_control_batch(batch), MirrorPidReset):
                resets.append((batch.base_offset, batch.partition_leader_epoch))
            continue
        for record in decode_records(batch):
            if record.value is not None:
                values[record.offset] = record.value.decode(errors="replace")
    return LogRecords(values, epochs, tuple(resets), view.batches, view.log_end_offset)
