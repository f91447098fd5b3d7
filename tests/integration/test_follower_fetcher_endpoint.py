"""The follower fetcher's real executor against an in-process leader endpoint over two real
replica managers (Kafka's ``MockLeaderEndPoint`` tests): whatever the follower's log held,
it ends equal to the leader's, byte for byte, through the shared fetcher plan.

The endpoint answers with the leader ``ReplicaManager``'s own Fetch, the way the Fetch
handler does; OffsetForLeaderEpoch and ListOffsets read the leader's partition. Only the
wire is left out, so each test isolates the executor and the plan's follower rules."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.replica_manager import TOPIC, FakeClock, log_clock, state

from mirrorsim.broker.log.log_manager import LogManager
from mirrorsim.broker.replica import FetchParams, PartitionFetch, ReplicaManager
from mirrorsim.broker.replica.fetch_session import FetchKey
from mirrorsim.broker.replica.follower_fetcher import FetcherConfig, ReplicaFetcherManager
from mirrorsim.broker.replica.leader_endpoint import (
    EpochAnswer,
    EpochQuery,
    FollowerAnswer,
    FollowerFetch,
    PartitionKey,
)
from mirrorsim.client.config import ClientConfig
from mirrorsim.drills.polling import wait_until
from mirrorsim.fetcher.plan import EpochSupport, FetchedPartition
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.records import Record, build_batch, iter_batches
from mirrorsim.protocol.records.raw_batch import RawBatch

LEADER, FOLLOWER = 1, 2
LONG_POLL_MS = 50
KEY = (TOPIC, 0)
SUPPORTS = pytest.mark.parametrize(
    "support",
    [EpochSupport.DIVERGING_EPOCH, EpochSupport.OFFSET_FOR_LEADER_EPOCH],
    ids=["fetch-v12", "offset-for-leader-epoch"],
)


def batch(offset: int, count: int, epoch: int) -> RawBatch:
    records = [
        Record(offset + i, 1_000, None, f"{epoch}:{offset + i}".encode()) for i in range(count)
    ]
    return build_batch(records, base_offset=offset, partition_leader_epoch=epoch)


@dataclass
class InProcessLeader:
    """A ``LeaderEndpoint`` over the leader's ``ReplicaManager``; counts its requests."""

    leader: ReplicaManager
    support: EpochSupport
    fetches: int = 0
    epoch_queries: int = 0

    async def epoch_support(self) -> EpochSupport:
        return self.support

    async def fetch(
        self, requests: Mapping[PartitionKey, FollowerFetch]
    ) -> dict[PartitionKey, FollowerAnswer]:
        self.fetches += 1
        asked = {
            FetchKey(*key): PartitionFetch(
                fetch_offset=r.fetch_offset,
                partition_max_bytes=1 << 20,
                current_leader_epoch=r.current_leader_epoch,
                last_fetched_epoch=r.last_fetched_epoch
                if self.support is EpochSupport.DIVERGING_EPOCH
                else -1,
                log_start_offset=r.log_start_offset,
                mirror_leader_epoch=r.mirror_leader_epoch,
            )
            for key, r in requests.items()
        }
        outcomes = await self.leader.fetch(
            FetchParams(replica_id=FOLLOWER, max_wait_ms=LONG_POLL_MS), asked
        )
        answers = {}
        for fetch_key, outcome in outcomes.items():
            key = (fetch_key.topic, fetch_key.partition)
            if isinstance(outcome, KafkaError):
                answers[key] = FollowerAnswer(FetchedPartition(outcome.code, -1, -1, -1))
                continue
            answers[key] = FollowerAnswer(
                FetchedPartition(
                    ErrorCode.NONE,
                    outcome.high_watermark,
                    outcome.last_stable_offset,
                    outcome.log_start_offset,
                    batches=tuple(iter_batches(bytes(outcome.records))),
                    diverging_epoch=outcome.diverging_epoch,
                )
            )
        return answers

    async def epoch_end_offsets(
        self, requests: Mapping[PartitionKey, EpochQuery]
    ) -> dict[PartitionKey, EpochAnswer]:
        self.epoch_queries += 1
        answers = {}
        for key, query in requests.items():
            epoch, end = self.leader.partition(*key).end_offset_for_epoch(query.epoch)
            answers[key] = EpochAnswer(ErrorCode.NONE, epoch, end)
        return answers

    async def offset_bounds(self, key: PartitionKey, current_leader_epoch: int) -> tuple[int, int]:
        partition = self.leader.partition(*key)
        return partition.log_start_offset, partition.log_end_offset

    async def close(self) -> None:
        return None


@dataclass
class Pair:
    leader: ReplicaManager
    follower: ReplicaManager


@pytest.fixture
async def pair(tmp_path: Path) -> AsyncIterator[Pair]:
    managers = []
    for broker in (LEADER, FOLLOWER):
        logs = LogManager(tmp_path / str(broker), clock=log_clock)
        rm = ReplicaManager(broker_id=broker, log_manager=logs, clock=FakeClock())
        await rm.start()
        managers.append((rm, logs))
    yield Pair(managers[0][0], managers[1][0])
    for rm, logs in managers:
        await rm.stop()
        logs.close()


async def write(rm: ReplicaManager, batches: list[RawBatch], *, leads: int, epoch: int) -> None:
    """``rm`` holds ``batches`` (their own epochs) under a partition state led by ``leads``."""
    await rm.apply_partition_state(
        state(0, leader=leads, epoch=epoch, replicas=(LEADER, FOLLOWER), isr=(LEADER,))
    )
    if batches:
        rm.partition(*KEY).log.append_as_follower(batches)


async def replicate(pair: Pair, support: EpochSupport, leader_epoch: int) -> InProcessLeader:
    """Start the follower's fetcher against the leader; wait until the logs are equal."""
    endpoint = InProcessLeader(pair.leader, support)
    fetchers = ReplicaFetcherManager(
        broker_id=FOLLOWER,
        replica_manager=pair.follower,
        endpoint=lambda _broker: None,
        config=FetcherConfig(wait_max_ms=0, backoff_ms=20),
        security=ClientConfig(),
        leader_endpoint=lambda _leader, _index: endpoint,
    )

    async def no_isr_change(*_: object) -> None:
        return None

    pair.follower.enable_replication(fetchers, no_isr_change)
    await pair.follower.apply_partition_state(
        state(0, leader=LEADER, epoch=leader_epoch, replicas=(LEADER, FOLLOWER), isr=(LEADER,))
    )
    await wait_until(lambda: logs_equal(pair), 10, "the follower's log equals the leader's")
    return endpoint


def log_bytes(rm: ReplicaManager) -> list[bytes]:
    log = rm.partition(*KEY).log
    if log.log_end_offset == log.log_start_offset:
        return []
    data = log.read(log.log_start_offset, 1 << 24, max_offset=log.log_end_offset).records
    return [bytes(b.data) for b in iter_batches(bytes(data))]


def logs_equal(pair: Pair) -> bool:
    leader, follower = pair.leader.partition(*KEY), pair.follower.partition(*KEY)
    return (
        follower.log_end_offset == leader.log_end_offset
        and follower.log_start_offset == leader.log_start_offset
        and log_bytes(pair.leader) == log_bytes(pair.follower)
    )


@SUPPORTS
async def test_an_empty_follower_copies_the_leaders_batches_unchanged(
    pair: Pair, support: EpochSupport
) -> None:
    await write(pair.leader, [batch(0, 3, 0), batch(3, 2, 1)], leads=LEADER, epoch=1)
    await write(pair.follower, [], leads=LEADER, epoch=1)
    await replicate(pair, support, leader_epoch=1)
    assert pair.follower.partition(*KEY).log.epoch_cache.epoch_entries == (
        pair.leader.partition(*KEY).log.epoch_cache.epoch_entries
    )


@SUPPORTS
async def test_a_deposed_leaders_unreplicated_records_are_cut_and_replaced(
    pair: Pair, support: EpochSupport
) -> None:
    """The follower led in epoch 1 and wrote 5-7 that nobody copied; epoch 2's leader
    wrote 5-9. The follower keeps 0-4, drops its 5-7, and copies 5-9."""
    common = [batch(0, 5, 0)]
    await write(pair.leader, [*common, batch(5, 5, 2)], leads=LEADER, epoch=3)
    await write(pair.follower, [*common, batch(5, 3, 1)], leads=LEADER, epoch=3)
    endpoint = await replicate(pair, support, leader_epoch=3)
    if support is EpochSupport.OFFSET_FOR_LEADER_EPOCH:
        assert endpoint.epoch_queries >= 1


@SUPPORTS
async def test_a_follower_behind_the_leaders_log_start_restarts_there(
    pair: Pair, support: EpochSupport
) -> None:
    await write(pair.leader, [batch(0, 10, 0), batch(10, 5, 0)], leads=LEADER, epoch=0)
    pair.leader.partition(*KEY).log.update_high_watermark(15)
    pair.leader.partition(*KEY).log.maybe_increment_log_start_offset(10)
    await write(pair.follower, [batch(0, 3, 0)], leads=LEADER, epoch=0)
    await replicate(pair, support, leader_epoch=0)
    assert pair.follower.partition(*KEY).log_start_offset == 10


@SUPPORTS
async def test_a_follower_ahead_of_an_uncleanly_elected_leader_cuts_back_to_its_end(
    pair: Pair, support: EpochSupport
) -> None:
    """The leader was elected from outside the ISR and has only 0-4 of epoch 0; the
    follower holds 0-9 of epoch 0. Nothing tells them apart but the leader's end."""
    await write(pair.leader, [batch(0, 5, 0)], leads=LEADER, epoch=1)
    await write(pair.follower, [batch(0, 5, 0), batch(5, 5, 0)], leads=LEADER, epoch=1)
    await replicate(pair, support, leader_epoch=1)
    assert pair.follower.partition(*KEY).log_end_offset == 5
