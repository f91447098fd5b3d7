"""The mirror replication quota: the rate it holds, its replica lists and its configs."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mirrorsim.broker.config import TOPIC_CONFIGS, ConfigError, validate_broker_configs
from mirrorsim.fetcher.throttle import (
    BURST_S,
    UNTHROTTLED,
    MirrorReplicationQuota,
    is_throttled_replica,
    throttled_partitions,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def quota_at(clock: FakeClock, rate: list[int], replicas: str = "*") -> MirrorReplicationQuota:
    return MirrorReplicationQuota(
        broker_id=4,
        rate=lambda: rate[0],
        throttled_replicas=lambda topic: replicas.split(","),
        clock=clock,
    )


def fetch_for(quota: MirrorReplicationQuota, clock: FakeClock, seconds: float, batch: int) -> int:
    """A fetcher with endless data: the bytes it gets in ``seconds`` of fake time."""
    fetched = 0
    end = clock.now + seconds
    while clock.now < end:
        if quota.exceeded():
            clock.now += quota.delay_ms() / 1000
            continue
        size = max(batch, quota.fetch_bytes(8 * 1024 * 1024) // batch * batch)
        quota.record(size)
        fetched += size
        clock.now += 0.001
    return fetched


@settings(max_examples=60, deadline=None)
@given(
    rate=st.integers(min_value=100_000, max_value=50_000_000),
    batch=st.integers(min_value=100, max_value=1024 * 1024),
    seconds=st.integers(min_value=5, max_value=60),
)
def test_a_throttled_fetcher_gets_the_rate_within_one_burst_and_one_batch(
    rate: int, batch: int, seconds: int
) -> None:
    clock = FakeClock()
    quota = quota_at(clock, [rate])
    fetched = fetch_for(quota, clock, seconds, batch)
    slack = rate * BURST_S + batch
    assert rate * seconds - slack <= fetched <= rate * seconds + slack


def test_removing_the_rate_forgives_the_debt_at_once() -> None:
    clock = FakeClock()
    rate = [1000]
    quota = quota_at(clock, rate)
    quota.record(10_000_000)
    assert quota.exceeded() and quota.delay_ms() > 1000 * 1000
    rate[0] = UNTHROTTLED
    assert not quota.exceeded()
    assert quota.delay_ms() == 0
    assert quota.fetch_bytes(8 * 1024 * 1024) == 8 * 1024 * 1024


def test_a_zero_rate_blocks_throttled_partitions_and_looks_again_each_second() -> None:
    clock = FakeClock()
    quota = quota_at(clock, [0])
    assert quota.exceeded()
    assert quota.delay_ms() == 1000


def test_byte_rate_is_the_throttled_bytes_over_the_quota_window() -> None:
    clock = FakeClock()
    quota = quota_at(clock, [UNTHROTTLED])
    for _ in range(11):
        quota.record(2_000)
        clock.now += 1
    assert quota.byte_rate() == pytest.approx(2_000, rel=0.1)


@pytest.mark.parametrize(
    ("entries", "partition", "broker", "throttled"),
    [
        (["*"], 7, 4, True),
        (["0:4"], 0, 4, True),
        (["0:4"], 0, 5, False),
        (["0:4", "1:4"], 1, 4, True),
        (["0:4"], 1, 4, False),
        ([], 0, 4, False),
    ],
)
def test_throttled_replicas_name_partition_and_destination_broker(
    entries: list[str], partition: int, broker: int, throttled: bool
) -> None:
    assert is_throttled_replica(entries, partition, broker) is throttled


ENTRIES = st.lists(
    st.one_of(
        st.builds("{}:{}".format, st.integers(0, 12), st.integers(3, 5)),
        st.sampled_from(["*", "01:4", "-1:4", "1:4:4", ":4", "1:", "\uff11:4", " 1:4", "1_0:4"]),
    ),
    max_size=6,
)


@given(entries=ENTRIES, partition=st.integers(0, 12), broker=st.integers(3, 5))
def test_a_topic_read_once_throttles_exactly_the_partitions_its_list_names(
    entries: list[str], partition: int, broker: int
) -> None:
    """The fetcher reads a topic's replica list once for all its partitions; the answer
    is the literal one, partition by partition (``*``, or ``p:b`` as written)."""
    listed = set(entries)
    named = "*" in listed or f"{partition}:{broker}" in listed
    assert (partition in throttled_partitions(entries, broker)) is named


@pytest.mark.parametrize("value", ["*", "0:4", "0:4,1:5", ""])
def test_the_replica_list_accepts_kafka_notation(value: str) -> None:
    TOPIC_CONFIGS["mirror.replication.throttled.replicas"].definition.parse(value)


@pytest.mark.parametrize("value", ["0", "a:1", "*,0:1", "0:1:2"])
def test_the_replica_list_refuses_anything_else(value: str) -> None:
    with pytest.raises(ConfigError, match="\\[partitionId\\]:\\[brokerId\\]"):
        TOPIC_CONFIGS["mirror.replication.throttled.replicas"].definition.parse(value)


def test_the_rate_is_a_dynamic_broker_config_of_at_least_zero() -> None:
    validate_broker_configs({"mirror.replication.throttled.rate": "100000000"})
    with pytest.raises(ConfigError):
        validate_broker_configs({"mirror.replication.throttled.rate": "-1"})
