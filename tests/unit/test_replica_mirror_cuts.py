"""A mirror leader's own cuts, seen by its followers: fetches past a last-mirrored-epoch
cut, follower progress that the cut invalidates, and a log restarted inside a batch."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from helpers.mirror_cuts import FOLLOWER, KEY, LEADER_EPOCH, MIRROR_CONFIGS, source_batch
from helpers.replica_manager import TOPIC, FakeClock, log_clock, state
from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.broker.log.log_manager import LogManager
from mirrorsim.broker.replica import FetchParams, PartitionFetch, ReplicaManager
from mirrorsim.broker.replica.partition import PartitionRead
from mirrorsim.protocol.errors import ErrorCode, KafkaError


@pytest.fixture
async def mirror_leader(tmp_path: Path) -> AsyncIterator[ReplicaManager]:
    """Broker 1 leads a mirror partition replicated to broker 2; its log holds the
    source's epoch 0 (offsets 0-5) and epoch 1 (offsets 6-8)."""
    log_manager = LogManager(tmp_path, clock=log_clock)
    rm = ReplicaManager(broker_id=1, log_manager=log_manager, clock=FakeClock())
    await rm.start()
    await rm.apply_partition_state(
        state(0, epoch=LEADER_EPOCH, replicas=(1, FOLLOWER), configs=MIRROR_CONFIGS)
    )
    rm.append_mirror_batches(TOPIC, 0, [source_batch(0, 6, 0), source_batch(6, 3, 1)])
    yield rm
    await rm.stop()
    log_manager.close()


async def follower_fetch(rm: ReplicaManager, offset: int, last_fetched_epoch: int) -> object:
    fetch = PartitionFetch(
        fetch_offset=offset,
        partition_max_bytes=1 << 20,
        current_leader_epoch=LEADER_EPOCH,
        last_fetched_epoch=last_fetched_epoch,
    )
    return (await rm.fetch(FetchParams(replica_id=FOLLOWER), {KEY: fetch}))[KEY]


async def test_a_follower_past_the_lme_cut_is_out_of_range_then_counted_at_the_cut(
    mirror_leader: ReplicaManager,
) -> None:
    """The cut removed epoch 1 entirely: the leader cannot place the follower's last
    fetched epoch, so it answers OFFSET_OUT_OF_RANGE (never a (-1, -1) diverging epoch,
    which reads as "no divergence" and left the follower asking for 9 forever)."""
    assert isinstance(await follower_fetch(mirror_leader, 9, 1), PartitionRead)
    mirror_leader.truncate_to(TOPIC, 0, 6)
    partition = mirror_leader.partition(TOPIC, 0)
    assert partition.followers[FOLLOWER].log_end_offset == -1, "9 no longer exists here"

    outcome = await follower_fetch(mirror_leader, 9, 1)
    assert isinstance(outcome, KafkaError) and outcome.code is ErrorCode.OFFSET_OUT_OF_RANGE
    assert partition.followers[FOLLOWER].log_end_offset == -1

    outcome = await follower_fetch(mirror_leader, 6, 0)
    assert isinstance(outcome, PartitionRead) and outcome.diverging_epoch is None
    assert partition.followers[FOLLOWER].log_end_offset == 6


async def test_an_emptied_log_answers_out_of_range_to_any_last_fetched_epoch(
    mirror_leader: ReplicaManager,
) -> None:
    """LME -1 empties the log; a follower still holding records cuts back to 0."""
    mirror_leader.truncate_fully_and_start_at(TOPIC, 0, 0)
    outcome = await follower_fetch(mirror_leader, 9, 1)
    assert isinstance(outcome, KafkaError) and outcome.code is ErrorCode.OFFSET_OUT_OF_RANGE
    outcome = await follower_fetch(mirror_leader, 0, -1)
    assert isinstance(outcome, PartitionRead) and outcome.records == b""


@given(start=st.integers(20, 60), before=st.integers(1, 20), after=st.integers(0, 20))
async def test_an_empty_log_takes_the_batch_holding_its_start_whole(
    tmp_path_factory: pytest.TempPathFactory, start: int, before: int, after: int
) -> None:
    """DeleteRecords cut the source at ``start`` inside a batch: the restarted log takes
    the whole batch (Kafka's follower does the same); a log with records refuses it."""
    log_manager = LogManager(tmp_path_factory.mktemp("log"), clock=log_clock)
    rm = ReplicaManager(broker_id=1, log_manager=log_manager, clock=FakeClock())
    await rm.start()
    try:
        await rm.apply_partition_state(state(0, configs=MIRROR_CONFIGS))
        straddling = source_batch(start - before, before + after + 1, 0)
        rm.truncate_fully_and_start_at(TOPIC, 0, start)
        rm.append_mirror_batches(TOPIC, 0, [straddling])
        partition_log = rm.partition(TOPIC, 0).log
        assert [b.base_offset for b in partition_log.batches()] == [start - before]
        assert partition_log.log_end_offset == start + after + 1

        await rm.apply_partition_state(state(1, configs=MIRROR_CONFIGS))
        rm.append_mirror_batches(TOPIC, 1, [source_batch(0, start, 0)])
        with pytest.raises(KafkaError):
            rm.append_mirror_batches(TOPIC, 1, [straddling])
    finally:
        await rm.stop()
        log_manager.close()
