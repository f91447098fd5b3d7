"""Property tests of the group state machine: the transition table, and the coordinator
driven by random joins, syncs, heartbeats, leaves and clock jumps."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
)

from mirrorsim.broker.group import (
    CommittedOffset,
    GroupConfig,
    GroupCoordinator,
    GroupState,
    IllegalGroupTransition,
    InMemoryOffsetStore,
    ManualClock,
    TopicPartition,
)
from mirrorsim.broker.group.config import NEW_MEMBER_JOIN_TIMEOUT_MS
from mirrorsim.broker.group.messages import (
    JoinRequest,
    JoinResult,
    LeavingMember,
    SyncRequest,
    SyncResult,
)
from mirrorsim.broker.group.state import TRANSITIONS, GroupEvent, next_state
from mirrorsim.protocol.errors import ErrorCode

_T = TypeVar("_T")


@given(st.sampled_from(GroupState), st.sampled_from(GroupEvent))
def test_every_state_event_pair_is_in_the_table_or_illegal(
    state: GroupState, event: GroupEvent
) -> None:
    if (state, event) in TRANSITIONS:
        assert next_state(state, event) is TRANSITIONS[(state, event)]
    else:
        with pytest.raises(IllegalGroupTransition):
            next_state(state, event)


def test_dead_is_terminal() -> None:
    assert not [key for key in TRANSITIONS if key[0] is GroupState.DEAD]


SESSION_MS = 10_000
REBALANCE_MS = 20_000
PROTOCOL_CHOICES = [
    (("range", b"r"),),
    (("range", b"r"), ("roundrobin", b"rr")),
    (("roundrobin", b"rr"), ("range", b"r")),
]
HEARTBEAT_ERRORS = {
    ErrorCode.NONE,
    ErrorCode.REBALANCE_IN_PROGRESS,
    ErrorCode.UNKNOWN_MEMBER_ID,
    ErrorCode.ILLEGAL_GENERATION,
    ErrorCode.FENCED_INSTANCE_ID,
}


@dataclass
class Client:
    """What a consumer knows about its own membership."""

    instance_id: str | None
    protocols: tuple[tuple[str, bytes], ...]
    member_id: str = ""
    generation_id: int = -1
    join: asyncio.Future[JoinResult] | None = None
    sync: asyncio.Future[SyncResult] | None = None
    last_join: JoinResult | None = None
    results: list[object] = field(default_factory=list)


class GroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.clock = ManualClock()
        self.coordinator = GroupCoordinator(
            offset_store=InMemoryOffsetStore(),
            clock=self.clock,
            config=GroupConfig(initial_rebalance_delay_ms=3000),
        )
        self.clients: list[Client] = []
        self.highest_generation = 0

    def run(self, action: Callable[[], _T]) -> _T:
        async def call() -> _T:
            return action()

        return self.loop.run_until_complete(call())

    @initialize(
        clients=st.lists(
            st.tuples(st.sampled_from([None, "static-a", "static-b"]), st.integers(0, 2)),
            min_size=1,
            max_size=4,
        )
    )
    def create_clients(self, clients: list[tuple[str | None, int]]) -> None:
        seen: set[str] = set()
        for instance_id, protocols in clients:
            if instance_id in seen:
                instance_id = None
            if instance_id is not None:
                seen.add(instance_id)
            self.clients.append(Client(instance_id, PROTOCOL_CHOICES[protocols]))

    def client(self, index: int) -> Client:
        return self.clients[index % len(self.clients)]

    @rule(index=st.integers(0, 3), require_known=st.booleans(), forget_id=st.booleans())
    def join(self, index: int, require_known: bool, forget_id: bool) -> None:
        client = self.client(index)
        if client.join is not None and not client.join.done():
            return
        if forget_id:
            client.member_id = ""
        request = JoinRequest(
            group_id="g",
            member_id=client.member_id,
            group_instance_id=client.instance_id,
            client_id="c",
            client_host="/127.0.0.1",
            session_timeout_ms=SESSION_MS,
            rebalance_timeout_ms=REBALANCE_MS,
            protocol_type="consumer",
            protocols=client.protocols,
            require_known_member_id=require_known,
        )
        client.join = self.run(lambda: self.coordinator.join_group(request))

    @rule(index=st.integers(0, 3))
    def sync(self, index: int) -> None:
        client = self.client(index)
        joined = client.last_join
        if joined is None or (client.sync is not None and not client.sync.done()):
            return
        assignments = tuple((m.member_id, m.member_id.encode()) for m in joined.members)
        request = SyncRequest(
            "g", joined.generation_id, joined.member_id, client.instance_id, None, None, assignments
        )
        client.sync = self.run(lambda: self.coordinator.sync_group(request))

    @rule(index=st.integers(0, 3))
    def heartbeat(self, index: int) -> None:
        client = self.client(index)
        error = self.coordinator.heartbeat(
            "g", client.member_id, client.instance_id, client.generation_id
        )
        assert error in HEARTBEAT_ERRORS

    @rule(index=st.integers(0, 3), by_instance=st.booleans())
    def leave(self, index: int, by_instance: bool) -> None:
        client = self.client(index)
        member_id = "" if by_instance and client.instance_id else client.member_id
        (error,) = self.coordinator.leave_group("g", [LeavingMember(member_id, client.instance_id)])
        assert error in {ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID}

    @rule(index=st.integers(0, 3), offset=st.integers(0, 100))
    def commit(self, index: int, offset: int) -> None:
        client = self.client(index)
        tp = TopicPartition("t", 0)
        results = self.loop.run_until_complete(
            self.coordinator.commit_offsets(
                "g",
                client.generation_id,
                client.member_id,
                client.instance_id,
                {tp: CommittedOffset(offset)},
            )
        )
        assert results[tp] in HEARTBEAT_ERRORS
        if results[tp] is ErrorCode.NONE:
            assert self.coordinator.fetch_offsets("g", [tp])[tp].committed_offset == offset  # type: ignore[union-attr]

    @rule(delta_ms=st.sampled_from([0, 1, 1000, 3000, SESSION_MS, REBALANCE_MS]))
    def advance(self, delta_ms: int) -> None:
        self.clock.advance(delta_ms)

    @rule()
    def collect_answers(self) -> None:
        for client in self.clients:
            if client.join is not None and client.join.done():
                result = client.join.result()
                client.join = None
                self._apply_join(client, result)
            if client.sync is not None and client.sync.done():
                result_sync = client.sync.result()
                client.sync = None
                if result_sync.error is ErrorCode.NONE:
                    assert result_sync.protocol_name is not None

    def _apply_join(self, client: Client, result: JoinResult) -> None:
        if result.error is ErrorCode.MEMBER_ID_REQUIRED:
            client.member_id = result.member_id
        elif result.error is ErrorCode.NONE:
            assert result.generation_id >= 1
            assert result.protocol_name in {name for name, _ in client.protocols}
            client.member_id = result.member_id
            client.generation_id = result.generation_id
            client.last_join = result
            if result.leader_id == result.member_id and not result.skip_assignment:
                assert result.member_id in {m.member_id for m in result.members}
        else:
            assert result.error in {
                ErrorCode.UNKNOWN_MEMBER_ID,
                ErrorCode.FENCED_INSTANCE_ID,
                ErrorCode.REBALANCE_IN_PROGRESS,
                ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
            }, result.error

    @invariant()
    def group_is_consistent(self) -> None:
        group = self.coordinator.group("g")
        if group is None:
            return
        assert group.generation_id >= self.highest_generation
        self.highest_generation = group.generation_id
        members = group.members.values()
        if group.state is GroupState.EMPTY:
            assert not group.members
        if not group.members:
            # A rebalance may still wait for members that were only handed an id.
            assert group.state in (GroupState.EMPTY, GroupState.PREPARING_REBALANCE)
        assert group.static_members == {
            m.group_instance_id: m.member_id for m in members if m.group_instance_id
        }
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            assert group.leader_id in group.members
            assert all(group.protocol_name in m.protocol_names for m in members)
        if group.state is GroupState.PREPARING_REBALANCE:
            assert group.join_timer is not None, "a rebalance always has a deadline"
        else:
            assert all(m.awaiting_join is None for m in members)
        if group.state is not GroupState.COMPLETING_REBALANCE:
            assert all(m.awaiting_sync is None for m in members)
        for member in members:
            parked = member.awaiting_join is not None or member.awaiting_sync is not None
            assert parked or member.session_expiry is not None, "every idle member can expire"

    def teardown(self) -> None:
        """With every client silent, all sessions expire and every parked request is
        answered: nothing can wait forever."""
        try:
            for _ in range(4):
                self.clock.advance(NEW_MEMBER_JOIN_TIMEOUT_MS)
            group = self.coordinator.group("g")
            if group is not None:
                assert group.state is GroupState.EMPTY
            for client in self.clients:
                for pending in (client.join, client.sync):
                    assert pending is None or pending.done()
            self.loop.run_until_complete(self.coordinator.stop())
            assert self.clock.pending_timers == 0
        finally:
            self.loop.close()


GroupMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
TestGroupMachine = GroupMachine.TestCase
