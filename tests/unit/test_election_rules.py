"""Kafka's election rules as properties of ``plan_partition`` and ``elect_leader``."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.broker.controller import NO_LEADER, ElectionType, elect_leader, plan_partition
from mirrorsim.broker.controller.election import may_unfence, rebalanced
from mirrorsim.broker.metadata.models import PartitionAssignment
from mirrorsim.protocol.errors import ErrorCode, KafkaError

BROKERS = [1, 2, 3, 4, 5]


@st.composite
def partitions(draw: st.DrawFn) -> PartitionAssignment:
    replicas = tuple(draw(st.permutations(BROKERS))[: draw(st.integers(1, 5))])
    isr = tuple(r for r in replicas if draw(st.booleans())) or (replicas[0],)
    leader = draw(st.sampled_from([*isr, NO_LEADER]))
    return PartitionAssignment(0, replicas, leader, draw(st.integers(0, 100)), isr)


live_sets = st.sets(st.sampled_from(BROKERS))


@given(partitions(), live_sets, st.booleans())
def test_plan_keeps_kafkas_invariants(
    current: PartitionAssignment, live: set[int], unclean: bool
) -> None:
    planned = plan_partition(current, live, unclean_allowed=unclean)
    assert planned.isr, "the ISR never becomes empty"
    assert set(planned.isr) <= set(current.replicas)
    assert planned.replicas == current.replicas
    if planned.leader != NO_LEADER:
        assert planned.leader in live
        assert planned.leader in planned.isr
    if planned.leader == current.leader:
        assert planned.leader_epoch == current.leader_epoch
    else:
        assert planned.leader_epoch == current.leader_epoch + 1
    if not unclean and planned.leader != NO_LEADER:
        assert planned.leader in current.isr
    if planned.leader != NO_LEADER and planned.leader not in current.isr:
        assert planned.isr == (planned.leader,)
    assert plan_partition(planned, live, unclean_allowed=unclean) == planned


@given(partitions(), live_sets)
def test_a_live_in_sync_leader_is_never_replaced(
    current: PartitionAssignment, live: set[int]
) -> None:
    live = live | {current.leader} if current.leader != NO_LEADER else live
    planned = plan_partition(current, live, unclean_allowed=False)
    if current.leader != NO_LEADER:
        assert planned.leader == current.leader


def test_clean_election_takes_the_first_live_isr_replica_in_assignment_order() -> None:
    current = PartitionAssignment(0, (1, 2, 3), 1, 4, (1, 3, 2))
    assert plan_partition(current, {2, 3}, unclean_allowed=False) == PartitionAssignment(
        0, (1, 2, 3), 2, 5, (3, 2)
    )


def test_last_isr_member_stays_when_it_dies_and_unclean_takes_a_lagging_replica() -> None:
    current = PartitionAssignment(0, (1, 2), 1, 0, (1,))
    offline = plan_partition(current, {2}, unclean_allowed=False)
    assert offline == PartitionAssignment(0, (1, 2), NO_LEADER, 1, (1,))
    assert plan_partition(offline, {1, 2}, unclean_allowed=False).leader == 1
    assert plan_partition(offline, {2}, unclean_allowed=True) == PartitionAssignment(
        0, (1, 2), 2, 2, (2,)
    )


@pytest.mark.parametrize(
    ("leader", "isr", "live", "code"),
    [
        (1, (1, 2), {1, 2}, ErrorCode.ELECTION_NOT_NEEDED),
        (2, (2,), {1, 2}, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE),
        (2, (1, 2), {2}, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE),
    ],
)
def test_preferred_election_errors(
    leader: int, isr: tuple[int, ...], live: set[int], code: ErrorCode
) -> None:
    with pytest.raises(KafkaError) as raised:
        elect_leader(PartitionAssignment(0, (1, 2), leader, 3, isr), live, ElectionType.PREFERRED)
    assert raised.value.code == code


def test_preferred_election_moves_leadership_to_the_first_replica() -> None:
    current = PartitionAssignment(0, (1, 2, 3), 2, 3, (2, 3, 1))
    elected = elect_leader(current, {1, 2, 3}, ElectionType.PREFERRED)
    assert (elected.leader, elected.leader_epoch, elected.isr) == (1, 4, (2, 3, 1))


def test_unclean_election_needs_an_offline_leader_and_a_live_replica() -> None:
    online = PartitionAssignment(0, (1, 2), 1, 0, (1,))
    with pytest.raises(KafkaError) as raised:
        elect_leader(online, {1, 2}, ElectionType.UNCLEAN)
    assert raised.value.code == ErrorCode.ELECTION_NOT_NEEDED
    offline = PartitionAssignment(0, (1, 2), NO_LEADER, 1, (1,))
    with pytest.raises(KafkaError) as raised:
        elect_leader(offline, set(), ElectionType.UNCLEAN)
    assert raised.value.code == ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
    assert elect_leader(offline, {2}, ElectionType.UNCLEAN).isr == (2,)


@given(partitions(), live_sets, st.booleans(), st.sampled_from(BROKERS))
def test_one_pass_over_a_fenced_broker_lets_it_be_unfenced(
    current: PartitionAssignment, live: set[int], unclean: bool, fenced: int
) -> None:
    """A fenced incarnation counts as not live; the pass that plans without it leaves it
    leading nothing and in no ISR with another live member, the rule for unfencing it."""
    others = live - {fenced}
    planned = plan_partition(current, others, unclean_allowed=unclean)
    assert may_unfence(fenced, [planned], others)
    if fenced in current.isr and any(r in others for r in current.isr):
        assert fenced not in planned.isr, "it rejoins only by catching up"
        assert planned.leader != fenced


def test_a_broker_still_leading_or_in_a_shared_isr_stays_fenced() -> None:
    assert not may_unfence(1, [PartitionAssignment(0, (1, 2), 1, 3, (1,))], {2})
    assert not may_unfence(1, [PartitionAssignment(0, (1, 2), 2, 3, (1, 2))], {2})
    assert may_unfence(1, [PartitionAssignment(0, (1, 2), 2, 3, (2,))], {2})
    # the last ISR member keeps its place and leads again once unfenced
    assert may_unfence(1, [PartitionAssignment(0, (1, 2), NO_LEADER, 4, (1, 2))], set())


@given(partitions(), live_sets)
def test_balancing_elects_only_a_live_in_sync_preferred_replica(
    current: PartitionAssignment, live: set[int]
) -> None:
    """``rebalanced``: the preferred replica, when it is live, in the ISR and not the
    leader already; the ISR kept and the epoch bumped; a balanced partition stays put."""
    balanced = rebalanced(current, live)
    preferred = current.replicas[0]
    eligible = current.leader != preferred and preferred in live and preferred in current.isr
    if not eligible:
        assert balanced is None
        return
    assert balanced is not None
    assert (balanced.leader, balanced.isr) == (preferred, current.isr)
    assert balanced.leader_epoch == current.leader_epoch + 1
    assert rebalanced(balanced, live) is None
