"""Fetch v19's MirrorLeaderEpoch between a mirror leader and its followers, and followers
dropped from the ISR within a term."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers.mirror_cuts import FOLLOWER, KEY, LEADER_EPOCH, MIRROR_CONFIGS, source_batch
from helpers.replica_manager import TOPIC, FakeClock, log_clock, state

from mirrorsim.broker.log.log_manager import LogManager
from mirrorsim.broker.replica import FetchParams, PartitionFetch, ReplicaManager
from mirrorsim.broker.replica.follower_fetcher import FollowerState, ReplicaFetcher
from mirrorsim.broker.replica.partition import PartitionRead
from mirrorsim.protocol.errors import ErrorCode, KafkaError

LATEST_SOURCE_EPOCH = 3


@pytest.fixture
async def manager(tmp_path: Path) -> AsyncIterator[ReplicaManager]:
    log_manager = LogManager(tmp_path, clock=log_clock)
    rm = ReplicaManager(broker_id=1, log_manager=log_manager, clock=FakeClock())
    await rm.start()
    yield rm
    await rm.stop()
    log_manager.close()


async def lead(rm: ReplicaManager, configs: dict[str, str]) -> None:
    """Broker 1 leads in epoch 4; the log holds epochs 0 (offsets 0-5) and 3 (6-8)."""
    await rm.apply_partition_state(
        state(0, epoch=LEADER_EPOCH, replicas=(1, FOLLOWER), configs=configs)
    )
    batches = [source_batch(0, 6, 0), source_batch(6, 3, LATEST_SOURCE_EPOCH)]
    rm.append_mirror_batches(TOPIC, 0, batches)


async def fetch(rm: ReplicaManager, mirror_leader_epoch: int) -> object:
    request = PartitionFetch(
        fetch_offset=0,
        partition_max_bytes=1 << 20,
        current_leader_epoch=LEADER_EPOCH,
        mirror_leader_epoch=mirror_leader_epoch,
    )
    return (await rm.fetch(FetchParams(replica_id=FOLLOWER), {KEY: request}))[KEY]


def expected_error(sent: int, latest: int) -> ErrorCode | None:
    if sent == -1 or sent == latest:
        return None
    return ErrorCode.FENCED_LEADER_EPOCH if sent < latest else ErrorCode.UNKNOWN_LEADER_EPOCH


@pytest.mark.parametrize("sent", range(-1, LEADER_EPOCH + 2))
async def test_the_leader_fences_the_mirror_leader_epoch_against_its_latest_log_epoch(
    manager: ReplicaManager, sent: int
) -> None:
    """The destination's own leader epoch (4) plays no part: the batches carry the
    source's epochs, so 4 is as wrong as 2 and only 3 (or -1, unchecked) reads."""
    await lead(manager, MIRROR_CONFIGS)
    assert manager.partition(TOPIC, 0).mirror_leader_epoch == LATEST_SOURCE_EPOCH
    outcome = await fetch(manager, sent)
    error = expected_error(sent, LATEST_SOURCE_EPOCH)
    if error is None:
        assert isinstance(outcome, PartitionRead) and outcome.records
    else:
        assert isinstance(outcome, KafkaError) and outcome.code is error
        assert manager.partition(TOPIC, 0).followers[FOLLOWER].log_end_offset == -1


async def test_a_last_mirrored_epoch_cut_makes_the_followers_epoch_unknown(
    manager: ReplicaManager,
) -> None:
    await lead(manager, MIRROR_CONFIGS)
    manager.truncate_to(TOPIC, 0, 6)
    outcome = await fetch(manager, LATEST_SOURCE_EPOCH)
    assert isinstance(outcome, KafkaError) and outcome.code is ErrorCode.UNKNOWN_LEADER_EPOCH
    assert isinstance(await fetch(manager, 0), PartitionRead)
    manager.truncate_to(TOPIC, 0, 0)
    assert manager.partition(TOPIC, 0).mirror_leader_epoch == -1
    outcome = await fetch(manager, 0)
    assert isinstance(outcome, KafkaError) and outcome.code is ErrorCode.UNKNOWN_LEADER_EPOCH


@pytest.mark.parametrize("sent", [0, LEADER_EPOCH + 1])
async def test_a_plain_partition_ignores_the_mirror_leader_epoch(
    manager: ReplicaManager, sent: int
) -> None:
    await lead(manager, {})
    assert manager.partition(TOPIC, 0).mirror_leader_epoch == -1
    assert isinstance(await fetch(manager, sent), PartitionRead)


@pytest.mark.parametrize(
    ("code", "sent", "answered", "adopted"),
    [
        (ErrorCode.FENCED_LEADER_EPOCH, 2, 3, True),
        (ErrorCode.UNKNOWN_LEADER_EPOCH, 3, 0, True),
        (ErrorCode.UNKNOWN_LEADER_EPOCH, 3, -1, True),
        (ErrorCode.FENCED_LEADER_EPOCH, 3, 3, False),
        (ErrorCode.FENCED_LEADER_EPOCH, -1, 3, False),
        (ErrorCode.NOT_LEADER_OR_FOLLOWER, 2, 3, False),
    ],
)
def test_a_follower_adopts_the_epoch_of_a_mirror_fencing_error(
    code: ErrorCode, sent: int, answered: int, adopted: bool
) -> None:
    """Only an answer naming another mirror leader epoch than the one sent is a mirror
    fencing; the rest waits for metadata, as any fencing does."""
    follower = FollowerState(mirror_leader_epoch=sent)
    data = SimpleNamespace(mirror_leader_epoch=answered)
    assert ReplicaFetcher._adopt_mirror_epoch(follower, code, sent, data) is adopted
    assert follower.mirror_leader_epoch == (answered if adopted else sent)


async def test_a_replica_dropped_from_the_isr_must_fetch_again_to_rejoin(
    manager: ReplicaManager,
) -> None:
    """A dead follower the controller removed from the ISR is not proposed back from its
    old progress at every other follower's fetch."""
    replicas = (1, FOLLOWER, 3)
    await manager.apply_partition_state(state(0, epoch=1, replicas=replicas, isr=replicas))
    partition = manager.partition(TOPIC, 0)
    for replica in (FOLLOWER, 3):
        partition.record_follower_fetch(replica, 0)
    await manager.apply_partition_state(state(0, epoch=1, replicas=replicas, isr=(1, FOLLOWER)))
    assert partition.followers[3].log_end_offset == -1
    assert partition.isr_to_expand() is None
    partition.record_follower_fetch(3, 0)
    assert partition.isr_to_expand() == (1, FOLLOWER, 3)
