"""The KIP-848 reconciliation rules, driven through `ConsumerGroupCoordinator` by a
Hypothesis state machine of members that join, heartbeat, leave and go silent while topics
grow: a partition is never held by two members, and once everyone heartbeats the group
settles on the target assignment, every partition owned exactly once."""

from __future__ import annotations

import uuid

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from mirrorsim.broker.group import GroupConfig, ManualClock, TopicPartition
from mirrorsim.broker.group.consumer_coordinator import ConsumerGroupCoordinator
from mirrorsim.broker.group.consumer_messages import ConsumerHeartbeat, TopicInfo
from mirrorsim.broker.group.consumer_states import (
    ConsumerGroupState,
    MemberAssignment,
    MemberState,
    reconcile,
)
from mirrorsim.protocol.errors import ErrorCode

GROUP = "g"
NAMES = [f"m{i}" for i in range(5)]
STATIC = {"m0": "pod-0", "m1": "pod-1"}
"""Clients with an instance id: they may leave for now (epoch -2) and come back."""
SESSION_MS = 45_000


def _tp(topic: str, *partitions: int) -> frozenset[TopicPartition]:
    return frozenset(TopicPartition(topic, p) for p in partitions)


def test_a_member_keeps_its_epoch_until_it_reports_the_revocation() -> None:
    current = MemberAssignment(MemberState.STABLE, 3, 2, _tp("t", 0, 1))
    step = reconcile(current, 4, _tp("t", 0), frozenset(), None)
    assert step == MemberAssignment(
        MemberState.UNREVOKED_PARTITIONS, 3, 2, _tp("t", 0), _tp("t", 1)
    )
    assert reconcile(step, 4, _tp("t", 0), frozenset(), _tp("t", 0, 1)) == step
    done = reconcile(step, 4, _tp("t", 0), frozenset(), _tp("t", 0))
    assert done == MemberAssignment(MemberState.STABLE, 4, 3, _tp("t", 0))


def test_a_partition_still_held_elsewhere_waits_until_released() -> None:
    current = MemberAssignment(MemberState.STABLE, 1, 0, frozenset())
    step = reconcile(current, 2, _tp("t", 0, 1), _tp("t", 1), frozenset())
    assert step.state is MemberState.UNRELEASED_PARTITIONS
    assert (step.epoch, step.assigned) == (2, _tp("t", 0))
    done = reconcile(step, 2, _tp("t", 0, 1), frozenset(), None)
    assert (done.state, done.assigned) == (MemberState.STABLE, _tp("t", 0, 1))


class ConsumerGroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = ManualClock()
        self.coordinator = ConsumerGroupCoordinator(
            clock=self.clock, config=GroupConfig(consumer_session_timeout_ms=SESSION_MS)
        )
        self.topics = {"t": TopicInfo(uuid.uuid4(), 4), "u": TopicInfo(uuid.uuid4(), 3)}
        self.clients: dict[str, tuple[str, int, frozenset[TopicPartition]]] = {}
        """Name to (member id, epoch, owned) as each simulated client sees it."""
        self.away: set[str] = set()
        """Static clients that left for now (epoch -2) and have not come back."""

    def _send(self, name: str, epoch: int, owned: frozenset[TopicPartition] | None) -> None:
        member_id = self.clients[name][0] if name in self.clients else str(uuid.uuid4())
        result = self.coordinator.heartbeat(
            ConsumerHeartbeat(
                group_id=GROUP,
                member_id=member_id,
                member_epoch=epoch,
                instance_id=STATIC.get(name),
                rebalance_timeout_ms=60_000,
                subscribed_topic_names=("t", "u") if epoch == 0 else None,
                owned=owned,
            ),
            self.topics,
        )
        if result.error is not ErrorCode.NONE:
            # fenced or unknown: the client drops everything and rejoins next time
            self.clients.pop(name, None)
            return
        previous = self.clients.get(name, (member_id, 0, frozenset()))[2]
        assignment = previous if result.assignment is None else result.assignment
        self.clients[name] = (member_id, result.member_epoch, assignment)

    @rule(name=st.sampled_from(NAMES))
    def join(self, name: str) -> None:
        if name not in self.clients:
            self._send(name, 0, frozenset())

    @precondition(lambda self: self.clients)
    @rule(data=st.data())
    def heartbeat(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(self.clients)))
        _, epoch, owned = self.clients[name]
        self._send(name, epoch, owned)

    @precondition(lambda self: self.clients)
    @rule(data=st.data())
    def leave(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(self.clients)))
        self._send(name, -1, None)
        self.clients.pop(name, None)

    @precondition(lambda self: any(name in self.clients for name in STATIC))
    @rule(data=st.data())
    def leave_for_now(self, data: st.DataObject) -> None:
        """A static client shuts down (epoch -2): its partitions wait for its successor."""
        name = data.draw(st.sampled_from(sorted(n for n in STATIC if n in self.clients)))
        self._send(name, -2, None)
        self.clients.pop(name, None)
        self.away.add(name)

    @precondition(lambda self: self.away)
    @rule(data=st.data())
    def come_back(self, data: st.DataObject) -> None:
        """The static client restarts under a new member id and takes its place back."""
        name = data.draw(st.sampled_from(sorted(self.away)))
        self.away.discard(name)
        self._send(name, 0, frozenset())

    @precondition(lambda self: self.clients)
    @rule(data=st.data())
    def go_silent(self, data: st.DataObject) -> None:
        """A client stops heartbeating; everyone else keeps going until it expires."""
        silent = data.draw(st.sampled_from(sorted(self.clients)))
        self.clients.pop(silent)
        self.clock.advance(SESSION_MS + 1)
        for name in sorted(self.clients):
            if name in self.clients:
                _, epoch, owned = self.clients[name]
                self._send(name, epoch, owned)

    @rule(extra=st.integers(1, 3))
    def grow_topic(self, extra: int) -> None:
        info = self.topics["u"]
        self.topics = {**self.topics, "u": TopicInfo(info.topic_id, info.partitions + extra)}

    @invariant()
    def no_partition_held_twice(self) -> None:
        group = self.coordinator.groups.get(GROUP)
        if group is None:
            return
        seen: set[TopicPartition] = set()
        for member in group.members.values():
            assert not (member.assignment.held & seen)
            seen |= member.assignment.held
        for member_id, _, owned in self.clients.values():
            member = group.members.get(member_id)
            if member is not None:
                assert owned <= member.assignment.held
        assert group.owners == {
            tp: m.member_id for m in group.members.values() for tp in m.assignment.held
        }

    def teardown(self) -> None:
        """Static clients come back, then everyone heartbeats until nothing changes: the
        group settles on its target."""
        for name in sorted(self.away):
            self._send(name, 0, frozenset())
        for _ in range(3 * len(NAMES) + 3):
            for name in sorted(self.clients):
                if name in self.clients:
                    _, epoch, owned = self.clients[name]
                    self._send(name, epoch, owned)
        group = self.coordinator.groups.get(GROUP)
        if group is None or not group.members:
            return
        assert group.state is ConsumerGroupState.STABLE
        every = {TopicPartition(t, p) for t, i in self.topics.items() for p in range(i.partitions)}
        owned = [tp for _, _, parts in self.clients.values() for tp in parts]
        assert sorted(owned) == sorted(every)
        for member in group.members.values():
            assert member.assignment.assigned == group.target[member.member_id]


ConsumerGroupMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=30)
test_consumer_group_reconciliation = ConsumerGroupMachine.TestCase
