"""The classic consumer-group coordinator: membership, rebalances and committed offsets.

Theory of operation (Kafka's GroupCoordinator):
- JoinGroup and SyncGroup answers are futures. A join parks the member until the join
  phase completes; a follower's sync parks it until the leader sends the assignment.
- Every wait is a timer on the injected clock: a member's session timeout, the group's
  rebalance timeout (for the join phase and, separately, for members that never sync),
  the initial rebalance delay of an empty group, and the expiry of a member id handed out
  with MEMBER_ID_REQUIRED. Nothing polls.
- All state changes happen synchronously inside the public methods and timer callbacks,
  on one event loop, so no locks are needed. Only offset commits and deletions await
  (the write to the `OffsetStore`).
- Online migration (`group.consumer.migration.policy`): a ConsumerGroupHeartbeat join
  upgrades a classic group with members to a consumer group (`migration`), whose classic
  members are then answered by `ClassicMembers`; the last consumer-protocol member
  leaving a group of classic members downgrades it back, with a rebalance.
- Ownership: with several brokers each coordinates the groups the live set maps onto it
  (`mirrorsim.broker.group.ownership`). When the live set changes, groups that moved
  away are unloaded (parked requests answer NOT_COORDINATOR, so clients look the
  coordinator up again) and groups that moved here have their offsets re-read from the
  store on first use (`acquire`), since their previous coordinator may have committed
  after this broker last read them. Kafka does the same per `__consumer_offsets`
  partition on leader election.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from types import MappingProxyType
from typing import TypeVar

from mirrorsim.broker.group import migration
from mirrorsim.broker.group.classic_members import ClassicMembers
from mirrorsim.broker.group.clock import Clock, SystemClock
from mirrorsim.broker.group.config import NEW_MEMBER_JOIN_TIMEOUT_MS, GroupConfig
from mirrorsim.broker.group.consumer_coordinator import ConsumerGroupCoordinator
from mirrorsim.broker.group.consumer_group import ConsumerGroup, ConsumerMember
from mirrorsim.broker.group.consumer_messages import (
    CONSUMER_GROUP_TYPE,
    JOIN_EPOCH,
    ConsumerGroupDescription,
    ConsumerHeartbeat,
    ConsumerHeartbeatResult,
    TopicInfo,
)
from mirrorsim.broker.group.group import GroupMetadata
from mirrorsim.broker.group.member import MemberMetadata
from mirrorsim.broker.group.messages import (
    GroupDescription,
    GroupOverview,
    JoinRequest,
    JoinResult,
    LeavingMember,
    MemberDescription,
    SyncRequest,
    SyncResult,
)
from mirrorsim.broker.group.offset_store import CommittedOffset, OffsetStore, TopicPartition
from mirrorsim.broker.group.share_group_coordinator import ShareGroupCoordinator
from mirrorsim.broker.group.share_messages import (
    SHARE_GROUP_TYPE,
    SHARE_PROTOCOL_TYPE,
    ShareGroupDescription,
    ShareHeartbeat,
    ShareHeartbeatResult,
)
from mirrorsim.broker.group.state import GroupEvent, GroupState
from mirrorsim.broker.group.subscription import CONSUMER_PROTOCOL_TYPE
from mirrorsim.protocol.errors import ErrorCode

_S = GroupState
_T = TypeVar("_T")
CLASSIC_GROUP_TYPE = "classic"
_NO_TOPICS: Mapping[str, TopicInfo] = MappingProxyType({})


def _reply(future: asyncio.Future[_T] | None, result: _T) -> None:
    """Answer a parked request unless its connection already gave up on it."""
    if future is not None and not future.done():
        future.set_result(result)


def _owns_every_group(_group_id: str) -> bool:
    return True


def _not_a_consumer_group(request: ConsumerHeartbeat) -> ConsumerHeartbeatResult:
    return ConsumerHeartbeatResult(
        ErrorCode.GROUP_ID_NOT_FOUND,
        request.member_id,
        request.member_epoch,
        message=f"Group {request.group_id} is not a consumer group.",
    )


class GroupCoordinator:
    def __init__(
        self,
        *,
        offset_store: OffsetStore,
        clock: Clock | None = None,
        config: GroupConfig | None = None,
        owns: Callable[[str], bool] = _owns_every_group,
    ) -> None:
        self._store = offset_store
        self._clock = clock or SystemClock()
        self._config = config or GroupConfig()
        self._owns = owns
        self._groups: dict[str, GroupMetadata] = {}
        self._offsets: dict[str, dict[TopicPartition, CommittedOffset]] = {}
        self._loaded: set[str] = set()
        """Groups whose cached offsets were read since this broker became their coordinator."""
        self._loading: dict[str, asyncio.Task[None]] = {}
        self._ownership_epoch = 0
        self._taken_over_ms: dict[str, int] = {}
        """When this broker took over each group listed from the store (start or a
        live-set change): its previous coordinator's members may still own partitions."""
        self.consumer = ConsumerGroupCoordinator(
            clock=self._clock, config=self._config, downgrade=self._downgrade
        )
        """KIP-848 consumer groups; a group id names a classic group or a consumer group,
        never both, and both kinds share the committed offsets kept here."""
        self._classic_members = ClassicMembers(
            self.consumer, clock=self._clock, config=self._config
        )
        """The JoinGroup/SyncGroup/Heartbeat/LeaveGroup members of consumer groups."""
        self.share = ShareGroupCoordinator(clock=self._clock, config=self._config)
        """KIP-932 share groups: the same group id namespace, no committed offsets."""

    async def start(self) -> None:
        """Load committed offsets of the groups this broker coordinates; each group that
        has some exists again, Empty."""
        for group_id, committed in (await self._store.load_all()).items():
            if self._owns(group_id):
                self._offsets[group_id] = committed
                self._ensure_group(group_id)
                self._loaded.add(group_id)
                self._taken_over_ms[group_id] = self._clock.now_ms()

    async def stop(self) -> None:
        """Cancel every timer and send NOT_COORDINATOR to parked requests, as Kafka does
        when it unloads a group, so clients look the coordinator up again."""
        for group in self._groups.values():
            self._release_members(group)
        self._groups.clear()
        for group_id in list(self.consumer.groups):
            self.consumer.unload(group_id)
        for group_id in list(self.share.groups):
            self.share.unload(group_id)

    @staticmethod
    def _release_members(group: GroupMetadata) -> None:
        group.cancel_timers()
        for member in group.members.values():
            _reply(member.awaiting_join, JoinResult(ErrorCode.NOT_COORDINATOR, member.member_id))
            _reply(member.awaiting_sync, SyncResult(ErrorCode.NOT_COORDINATOR))

    # Ownership

    def owns(self, group_id: str) -> bool:
        return self._owns(group_id)

    async def update_ownership(self, owns: Callable[[str], bool]) -> None:
        """The live broker set changed: unload the groups now coordinated elsewhere, and
        list the groups with committed offsets that are now coordinated here (their
        offsets are read on first use, see `acquire`)."""
        previous, self._owns = self._owns, owns
        self._ownership_epoch += 1
        known = (
            self._groups.keys()
            | self._offsets.keys()
            | self.consumer.groups.keys()
            | self.share.groups.keys()
        )
        for group_id in list(known):
            if not owns(group_id):
                self._unload(group_id)
            elif not previous(group_id):
                self._offsets.pop(group_id, None)
                self._loaded.discard(group_id)
        for group_id in await self._store.load_all():
            if self._owns(group_id):
                self._ensure_group(group_id)
                if not previous(group_id):
                    self._taken_over_ms[group_id] = self._clock.now_ms()

    def _ensure_group(self, group_id: str) -> None:
        """A group with committed offsets exists: as the consumer group it is, or else as
        an (Empty) classic group."""
        if group_id not in self.consumer.groups and group_id not in self.share.groups:
            self._groups.setdefault(group_id, GroupMetadata(group_id))

    def _unload(self, group_id: str) -> None:
        group = self._groups.pop(group_id, None)
        if group is not None:
            self._release_members(group)
        self.consumer.unload(group_id)
        self.share.unload(group_id)
        self._offsets.pop(group_id, None)
        self._loaded.discard(group_id)

    async def acquire(self, group_id: str) -> ErrorCode:
        """Called before serving a request for the group: NOT_COORDINATOR unless this
        broker coordinates it; otherwise its offsets are read from the store first if
        they were not since this broker became its coordinator. An empty group id is
        left to the API's own INVALID_GROUP_ID check, which Kafka makes first."""
        if not group_id:
            return ErrorCode.NONE
        while self._owns(group_id):
            if group_id in self._loaded:
                return ErrorCode.NONE
            loading = self._loading.get(group_id)
            if loading is None:
                loading = self._loading[group_id] = asyncio.create_task(self._load(group_id))
            await asyncio.shield(loading)
        return ErrorCode.NOT_COORDINATOR

    async def _load(self, group_id: str) -> None:
        epoch = self._ownership_epoch
        try:
            stored = await self._store.load_group(group_id)
        finally:
            del self._loading[group_id]
        if epoch != self._ownership_epoch or not self._owns(group_id):
            return
        # offsets cached meanwhile were committed after the read (TxnOffsetCommit markers)
        committed = {**stored, **self._offsets.get(group_id, {})}
        if committed:
            self._offsets[group_id] = committed
            self._ensure_group(group_id)
        self._loaded.add(group_id)

    def group(self, group_id: str) -> GroupMetadata | None:
        """The live group, read-only by convention (metrics, tests)."""
        return self._groups.get(group_id)

    # JoinGroup

    def join_group(
        self, request: JoinRequest, topics: Mapping[str, TopicInfo] = _NO_TOPICS
    ) -> asyncio.Future[JoinResult]:
        """`topics` (the broker's topics) is read only when the group is a consumer group
        with members: the classic member joins it and its assignor assigns, as in Kafka 4
        whatever the migration policy."""
        future: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        error = self._validate_join(request)
        if error is not ErrorCode.NONE:
            _reply(future, JoinResult(error, request.member_id))
            return future
        if request.group_id in self.share.groups:
            _reply(future, JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, request.member_id))
            return future
        consumer_group = self.consumer.groups.get(request.group_id)
        if consumer_group is not None:
            if consumer_group.members:
                _reply(future, self._classic_members.join(consumer_group, request, topics))
                return future
            self.consumer.delete(request.group_id)
        group = self._groups.get(request.group_id)
        if group is None:
            if request.member_id:
                _reply(future, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, request.member_id))
                return future
            group = self._groups[request.group_id] = GroupMetadata(request.group_id)
        if not group.supports_protocols(
            request.protocol_type, [name for name, _ in request.protocols]
        ):
            _reply(future, JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, request.member_id))
        elif self._would_exceed_max_size(group, request):
            _reply(future, JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, request.member_id))
        elif not request.member_id:
            self._join_new_member(group, request, future)
        else:
            self._join_current_member(group, request, future)
        return future

    def _validate_join(self, request: JoinRequest) -> ErrorCode:
        if not request.group_id:
            return ErrorCode.INVALID_GROUP_ID
        if not (
            self._config.min_session_timeout_ms
            <= request.session_timeout_ms
            <= self._config.max_session_timeout_ms
        ):
            return ErrorCode.INVALID_SESSION_TIMEOUT
        return ErrorCode.NONE

    def _would_exceed_max_size(self, group: GroupMetadata, request: JoinRequest) -> bool:
        known = (
            request.member_id in group.members
            or request.member_id in group.pending_members
            or (request.group_instance_id or "") in group.static_members
        )
        return not known and len(group.members) >= self._config.max_size

    def _join_new_member(
        self, group: GroupMetadata, request: JoinRequest, future: asyncio.Future[JoinResult]
    ) -> None:
        prefix = request.group_instance_id or request.client_id
        member_id = f"{prefix}-{uuid.uuid4()}"
        if request.group_instance_id is not None:
            self._join_static_member(group, request, member_id, future)
        elif request.require_known_member_id:
            group.pending_members[member_id] = self._clock.call_later(
                request.session_timeout_ms,
                lambda: self._expire_pending_member(group, member_id),
            )
            _reply(future, JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id))
        else:
            self._add_member_and_rebalance(group, request, member_id, future)

    def _join_static_member(
        self,
        group: GroupMetadata,
        request: JoinRequest,
        member_id: str,
        future: asyncio.Future[JoinResult],
    ) -> None:
        assert request.group_instance_id is not None
        old_member_id = group.static_members.get(request.group_instance_id)
        if old_member_id is None:
            self._add_member_and_rebalance(group, request, member_id, future)
            return
        member = group.members[old_member_id]
        _reply(member.awaiting_join, JoinResult(ErrorCode.FENCED_INSTANCE_ID, old_member_id))
        _reply(member.awaiting_sync, SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        member.awaiting_join = member.awaiting_sync = None
        group.replace_static_member(member, member_id)
        if group.state is _S.STABLE and member.matches(request.protocols):
            member.session_timeout_ms = request.session_timeout_ms
            member.rebalance_timeout_ms = request.rebalance_timeout_ms
            self._arm_session_expiry(group, member)
            is_leader = group.leader_id == member_id
            _reply(future, self._current_join_result(group, member, skip_assignment=is_leader))
        else:
            self._update_member_and_rebalance(group, member, request, future)

    def _join_current_member(
        self, group: GroupMetadata, request: JoinRequest, future: asyncio.Future[JoinResult]
    ) -> None:
        member_id = request.member_id
        pending_expiry = group.pending_members.pop(member_id, None)
        if pending_expiry is not None:
            pending_expiry.cancel()
            self._add_member_and_rebalance(group, request, member_id, future)
            return
        error = group.current_member_error(member_id, request.group_instance_id)
        if error is not ErrorCode.NONE:
            _reply(future, JoinResult(error, member_id))
            return
        member = group.members[member_id]
        if group.state is _S.PREPARING_REBALANCE:
            self._update_member_and_rebalance(group, member, request, future)
        elif group.state is _S.COMPLETING_REBALANCE and member.matches(request.protocols):
            _reply(future, self._current_join_result(group, member))
        elif (
            group.state is _S.STABLE
            and group.leader_id != member_id
            and member.matches(request.protocols)
        ):
            self._arm_session_expiry(group, member)
            _reply(future, self._current_join_result(group, member))
        elif group.state in (_S.COMPLETING_REBALANCE, _S.STABLE):
            self._update_member_and_rebalance(group, member, request, future)
        else:
            _reply(future, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))

    def _add_member_and_rebalance(
        self,
        group: GroupMetadata,
        request: JoinRequest,
        member_id: str,
        future: asyncio.Future[JoinResult],
    ) -> None:
        member = MemberMetadata(
            member_id=member_id,
            group_instance_id=request.group_instance_id,
            client_id=request.client_id,
            client_host=request.client_host,
            session_timeout_ms=request.session_timeout_ms,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
            protocol_type=request.protocol_type,
            protocols=request.protocols,
            awaiting_join=future,
        )
        if group.state is _S.PREPARING_REBALANCE and group.generation_id == 0:
            group.new_member_added = True
        group.add(member)
        self._arm_session_expiry(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(group)

    def _update_member_and_rebalance(
        self,
        group: GroupMetadata,
        member: MemberMetadata,
        request: JoinRequest,
        future: asyncio.Future[JoinResult],
    ) -> None:
        member.protocols = request.protocols
        member.session_timeout_ms = request.session_timeout_ms
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
        _reply(member.awaiting_join, JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id))
        member.awaiting_join = future
        self._maybe_prepare_rebalance(group)

    def _current_join_result(
        self, group: GroupMetadata, member: MemberMetadata, *, skip_assignment: bool = False
    ) -> JoinResult:
        is_leader = group.leader_id == member.member_id
        return JoinResult(
            ErrorCode.NONE,
            member.member_id,
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader_id=group.leader_id or "",
            members=group.joined_members() if is_leader else (),
            skip_assignment=skip_assignment,
        )

    # Rebalance

    def _maybe_prepare_rebalance(self, group: GroupMetadata) -> None:
        if group.state in (_S.EMPTY, _S.STABLE, _S.COMPLETING_REBALANCE):
            self._prepare_rebalance(group)
        elif group.state is _S.PREPARING_REBALANCE:
            self._maybe_complete_join(group)

    def _prepare_rebalance(self, group: GroupMetadata) -> None:
        if group.state is _S.COMPLETING_REBALANCE:
            self._fail_pending_syncs(group, ErrorCode.REBALANCE_IN_PROGRESS)
        if group.sync_timer is not None:
            group.sync_timer.cancel()
            group.sync_timer = None
        group.pending_sync_members.clear()
        delay_ms = self._config.initial_rebalance_delay_ms
        initial = group.state is _S.EMPTY and delay_ms > 0
        group.transition(GroupEvent.REBALANCE)
        if initial:
            group.in_initial_delay = True
            group.new_member_added = False
            delay_ms = min(delay_ms, group.rebalance_timeout_ms)
            remaining_ms = max(group.rebalance_timeout_ms - delay_ms, 0)
            self._arm_join_timer(
                group, delay_ms, lambda: self._end_initial_delay(group, remaining_ms)
            )
        else:
            self._arm_join_timer(
                group, group.rebalance_timeout_ms, lambda: self._complete_join(group)
            )
            self._maybe_complete_join(group)

    def _end_initial_delay(self, group: GroupMetadata, remaining_ms: int) -> None:
        """Kafka's InitialDelayedJoin: while new members keep arriving, wait another
        delay, never beyond the rebalance timeout."""
        if group.new_member_added and remaining_ms > 0:
            group.new_member_added = False
            delay_ms = min(self._config.initial_rebalance_delay_ms, remaining_ms)
            self._arm_join_timer(
                group, delay_ms, lambda: self._end_initial_delay(group, remaining_ms - delay_ms)
            )
        else:
            group.in_initial_delay = False
            self._complete_join(group)

    def _arm_join_timer(
        self, group: GroupMetadata, delay_ms: int, callback: Callable[[], None]
    ) -> None:
        if group.join_timer is not None:
            group.join_timer.cancel()
        group.join_timer = self._clock.call_later(delay_ms, callback)

    def _maybe_complete_join(self, group: GroupMetadata) -> None:
        if (
            group.state is _S.PREPARING_REBALANCE
            and (not group.in_initial_delay or not group.members)
            and group.has_all_members_joined()
        ):
            self._complete_join(group)

    def _complete_join(self, group: GroupMetadata) -> None:
        if group.state is not _S.PREPARING_REBALANCE:
            return
        if group.join_timer is not None:
            group.join_timer.cancel()
            group.join_timer = None
        group.in_initial_delay = False
        for member in list(group.members.values()):
            if member.awaiting_join is None and member.group_instance_id is None:
                group.remove(member)
        if group.members and not group.elect_joined_leader():
            # Only static members that have not rejoined are left: wait for them to
            # rejoin or for their sessions to expire.
            self._arm_join_timer(
                group, group.rebalance_timeout_ms, lambda: self._complete_join(group)
            )
            return
        group.init_next_generation()
        if group.state is _S.EMPTY:
            return
        for member in group.members.values():
            future, member.awaiting_join = member.awaiting_join, None
            member.is_new = False
            _reply(future, self._current_join_result(group, member))
            self._arm_session_expiry(group, member)
        group.pending_sync_members = set(group.members)
        generation_id = group.generation_id
        group.sync_timer = self._clock.call_later(
            group.rebalance_timeout_ms, lambda: self._expire_pending_syncs(group, generation_id)
        )

    def _expire_pending_syncs(self, group: GroupMetadata, generation_id: int) -> None:
        """Members that got their JoinGroup answer but never sent SyncGroup are dropped
        after the rebalance timeout, so one stuck follower cannot hold the group."""
        group.sync_timer = None
        if group.generation_id != generation_id or group.state not in (
            _S.COMPLETING_REBALANCE,
            _S.STABLE,
        ):
            return
        stale = [group.members[m] for m in group.pending_sync_members if m in group.members]
        if not stale:
            return
        for member in stale:
            self._fail_member(member, ErrorCode.UNKNOWN_MEMBER_ID)
            group.remove(member)
        self._prepare_rebalance(group)

    def _fail_pending_syncs(self, group: GroupMetadata, error: ErrorCode) -> None:
        for member in group.members.values():
            if member.awaiting_sync is not None:
                future, member.awaiting_sync = member.awaiting_sync, None
                _reply(future, SyncResult(error))
                self._arm_session_expiry(group, member)

    # Sessions

    def _arm_session_expiry(
        self, group: GroupMetadata, member: MemberMetadata, timeout_ms: int | None = None
    ) -> None:
        member.cancel_session_expiry()
        member.session_expiry = self._clock.call_later(
            member.session_timeout_ms if timeout_ms is None else timeout_ms,
            lambda: self._expire_member(group, member),
        )

    def _expire_member(self, group: GroupMetadata, member: MemberMetadata) -> None:
        member.session_expiry = None
        if group.members.get(member.member_id) is not member:
            return
        awaiting = member.awaiting_join is not None or member.awaiting_sync is not None
        if awaiting and not member.is_new:
            return
        self._remove_member_and_update_group(group, member)

    def _expire_pending_member(self, group: GroupMetadata, member_id: str) -> None:
        if group.pending_members.pop(member_id, None) is not None:
            self._maybe_complete_join(group)

    def _fail_member(self, member: MemberMetadata, error: ErrorCode) -> None:
        _reply(member.awaiting_join, JoinResult(error, member.member_id))
        _reply(member.awaiting_sync, SyncResult(error))
        member.awaiting_join = member.awaiting_sync = None

    def _remove_member_and_update_group(self, group: GroupMetadata, member: MemberMetadata) -> None:
        self._fail_member(member, ErrorCode.UNKNOWN_MEMBER_ID)
        group.remove(member)
        if group.state in (_S.STABLE, _S.COMPLETING_REBALANCE):
            self._prepare_rebalance(group)
        elif group.state is _S.PREPARING_REBALANCE:
            self._maybe_complete_join(group)

    # SyncGroup, Heartbeat, LeaveGroup

    def sync_group(self, request: SyncRequest) -> asyncio.Future[SyncResult]:
        future: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()
        consumer_group = self.consumer.groups.get(request.group_id)
        if consumer_group is not None:
            _reply(future, self._classic_members.sync(consumer_group, request))
            return future
        group = self._groups.get(request.group_id)
        error = self._validate_sync(group, request)
        if error is not ErrorCode.NONE or group is None:
            _reply(future, SyncResult(error))
            return future
        member = group.members[request.member_id]
        group.pending_sync_members.discard(member.member_id)
        if group.state is _S.STABLE:
            self._arm_session_expiry(group, member)
            _reply(future, self._sync_result(group, member))
            return future
        _reply(member.awaiting_sync, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        member.awaiting_sync = future
        if group.leader_id == member.member_id:
            assignments = dict(request.assignments)
            for each in group.members.values():
                each.assignment = assignments.get(each.member_id, b"")
                if each.awaiting_sync is not None:
                    pending, each.awaiting_sync = each.awaiting_sync, None
                    _reply(pending, self._sync_result(group, each))
                    self._arm_session_expiry(group, each)
            group.transition(GroupEvent.SYNC_COMPLETED)
        return future

    def _validate_sync(self, group: GroupMetadata | None, request: SyncRequest) -> ErrorCode:
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        error = group.current_member_error(request.member_id, request.group_instance_id)
        if error is not ErrorCode.NONE:
            return error
        if request.generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if (request.protocol_type is not None and request.protocol_type != group.protocol_type) or (
            request.protocol_name is not None and request.protocol_name != group.protocol_name
        ):
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        if group.state is _S.PREPARING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    @staticmethod
    def _sync_result(group: GroupMetadata, member: MemberMetadata) -> SyncResult:
        return SyncResult(
            ErrorCode.NONE, member.assignment, group.protocol_type, group.protocol_name
        )

    def heartbeat(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> ErrorCode:
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            return self._classic_members.heartbeat(
                consumer_group, member_id, group_instance_id, generation_id
            )
        group = self._groups.get(group_id)
        if group is None or group.state is _S.EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID
        error = group.current_member_error(member_id, group_instance_id)
        if error is not ErrorCode.NONE:
            return error
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        member = group.members[member_id]
        if member.awaiting_join is None and member.awaiting_sync is None:
            self._arm_session_expiry(group, member)
        if group.state is _S.PREPARING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def leave_group(self, group_id: str, members: Sequence[LeavingMember]) -> list[ErrorCode]:
        """One error code per leaving member, in request order."""
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            return [self._classic_members.leave(consumer_group, leaving) for leaving in members]
        group = self._groups.get(group_id)
        if group is None:
            return [ErrorCode.UNKNOWN_MEMBER_ID for _ in members]
        return [self._leave(group, leaving) for leaving in members]

    def _leave(self, group: GroupMetadata, leaving: LeavingMember) -> ErrorCode:
        member_id = leaving.member_id
        if not member_id and leaving.group_instance_id is not None:
            member_id = group.static_members.get(leaving.group_instance_id, "")
            if not member_id:
                return ErrorCode.UNKNOWN_MEMBER_ID
        pending_expiry = group.pending_members.pop(member_id, None)
        if pending_expiry is not None:
            pending_expiry.cancel()
            self._maybe_complete_join(group)
            return ErrorCode.NONE
        error = group.current_member_error(member_id, leaving.group_instance_id)
        if error is ErrorCode.NONE:
            self._remove_member_and_update_group(group, group.members[member_id])
        return error

    # Offsets

    async def commit_offsets(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        offsets: Mapping[TopicPartition, CommittedOffset],
        api_version: int | None = None,
    ) -> dict[TopicPartition, ErrorCode]:
        """Generation -1 with no member id is a simple commit: allowed only while the
        group has no members (kcat, kafka-python without group management). A member of a
        consumer group must commit with OffsetCommit v9 or later (`api_version`)."""
        error = self._validate_commit(
            group_id, generation_id, member_id, group_instance_id, api_version
        )
        if error is not ErrorCode.NONE:
            return dict.fromkeys(offsets, error)
        self._ensure_group(group_id)
        group = self._groups.get(group_id)
        member = None if group is None else group.members.get(member_id)
        if group is not None and member is not None and member.awaiting_join is None:
            self._arm_session_expiry(group, member)
        limit = self._config.offset_metadata_max_bytes
        results: dict[TopicPartition, ErrorCode] = {}
        accepted: dict[TopicPartition, CommittedOffset] = {}
        now_ms = self._clock.now_ms()
        for tp, committed in offsets.items():
            if len((committed.metadata or "").encode()) > limit:
                results[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                accepted[tp] = dataclasses.replace(committed, commit_timestamp=now_ms)
                results[tp] = ErrorCode.NONE
        if accepted:
            await self._store.commit(group_id, accepted)
            self._offsets.setdefault(group_id, {}).update(accepted)
        return results

    def validate_transactional_commit(
        self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None
    ) -> ErrorCode:
        """TxnOffsetCommit: member checks as OffsetCommit (KIP-447), but a commit without
        any member identity is accepted in every state, as Kafka does for old producers."""
        if group_id and generation_id < 0 and not member_id and group_instance_id is None:
            return ErrorCode.NONE
        return self._validate_commit(group_id, generation_id, member_id, group_instance_id)

    async def commit_transactional_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, CommittedOffset]
    ) -> None:
        """Materialize the offsets of a committed transaction (sent with TxnOffsetCommit,
        checked then, and released by the transaction's COMMIT marker)."""
        now_ms = self._clock.now_ms()
        stamped = {
            tp: dataclasses.replace(offset, commit_timestamp=now_ms)
            for tp, offset in offsets.items()
        }
        await self._store.commit(group_id, stamped)
        self._offsets.setdefault(group_id, {}).update(stamped)
        self._ensure_group(group_id)

    def _validate_commit(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        api_version: int | None = None,
    ) -> ErrorCode:
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        if group_id in self.share.groups:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group_id in self.consumer.groups:
            return self.consumer.validate_offset_commit(
                group_id, member_id, generation_id, api_version
            )
        group = self._groups.get(group_id)
        is_member_commit = generation_id >= 0 or bool(member_id) or group_instance_id is not None
        if group is None:
            if generation_id >= 0:
                return ErrorCode.ILLEGAL_GENERATION
            return ErrorCode.UNKNOWN_MEMBER_ID if is_member_commit else ErrorCode.NONE
        if is_member_commit:
            error = group.current_member_error(member_id, group_instance_id)
            if error is not ErrorCode.NONE:
                return error
            if generation_id != group.generation_id:
                return ErrorCode.ILLEGAL_GENERATION
        elif group.state is not _S.EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.state is _S.COMPLETING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def fetch_offsets(
        self, group_id: str, partitions: Sequence[TopicPartition] | None
    ) -> dict[TopicPartition, CommittedOffset | None]:
        """Committed offsets of a group; None where nothing was committed. Without
        `partitions`, every partition the group has committed."""
        committed = self._offsets.get(group_id, {})
        if partitions is None:
            return dict(committed)
        return {tp: committed.get(tp) for tp in partitions}

    async def delete_offsets(
        self, group_id: str, partitions: Sequence[TopicPartition]
    ) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        """OffsetDelete: a live consumer group keeps the offsets of topics it consumes."""
        group = self._groups.get(group_id)
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID, {}
        if group_id in self.share.groups:
            return ErrorCode.GROUP_ID_NOT_FOUND, {}
        if group_id in self.consumer.groups:
            return ErrorCode.NONE, await self._delete_consumer_offsets(group_id, partitions)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND, {}
        if group.state is not _S.EMPTY and group.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return ErrorCode.NON_EMPTY_GROUP, {}
        results: dict[TopicPartition, ErrorCode] = {}
        for tp in partitions:
            subscribed = group.state is not _S.EMPTY and group.is_subscribed_to(tp.topic)
            results[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC if subscribed else ErrorCode.NONE
        await self._delete_unsubscribed(group_id, results)
        return ErrorCode.NONE, results

    async def _delete_consumer_offsets(
        self, group_id: str, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, ErrorCode]:
        subscribed = self.consumer.groups[group_id].subscription
        results = {
            tp: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC if tp.topic in subscribed else ErrorCode.NONE
            for tp in partitions
        }
        await self._delete_unsubscribed(group_id, results)
        return results

    async def _delete_unsubscribed(
        self, group_id: str, results: Mapping[TopicPartition, ErrorCode]
    ) -> None:
        deletable = [tp for tp, error in results.items() if error is ErrorCode.NONE]
        committed = self._offsets.get(group_id, {})
        if any(tp in committed for tp in deletable):
            await self._store.delete(group_id, deletable)
            for tp in deletable:
                committed.pop(tp, None)

    # Admin

    def list_groups(
        self, states: Collection[str] = (), types: Collection[str] = ()
    ) -> list[GroupOverview]:
        """Classic, consumer and share groups coordinated here, filtered by state and type
        (case-insensitive; empty filters keep everything)."""
        wanted = {state.lower() for state in states}
        wanted_types = {t.lower() for t in types}
        overviews = [
            GroupOverview(g.group_id, g.protocol_type or "", g.state.value, CLASSIC_GROUP_TYPE)
            for g in self._groups.values()
        ] + [
            GroupOverview(g.group_id, CONSUMER_PROTOCOL_TYPE, g.state.value, CONSUMER_GROUP_TYPE)
            for g in self.consumer.groups.values()
        ]
        overviews += [
            GroupOverview(g.group_id, SHARE_PROTOCOL_TYPE, g.state.value, SHARE_GROUP_TYPE)
            for g in self.share.groups.values()
        ]
        return [
            o
            for o in overviews
            if self._owns(o.group_id)
            and (not wanted or o.state.lower() in wanted)
            and (not wanted_types or o.group_type in wanted_types)
        ]

    def group_type(self, group_id: str) -> str | None:
        if group_id in self.consumer.groups:
            return CONSUMER_GROUP_TYPE
        if group_id in self.share.groups:
            return SHARE_GROUP_TYPE
        return CLASSIC_GROUP_TYPE if group_id in self._groups else None

    # KIP-848 consumer groups

    def consumer_group_heartbeat(
        self, request: ConsumerHeartbeat, topics: Mapping[str, TopicInfo]
    ) -> ConsumerHeartbeatResult:
        """An Empty classic group (one that only has offsets, as every group is after a
        restart) becomes a consumer group on its first join, as in Kafka 4; a member
        heartbeating an epoch into it is unknown and rejoins. A classic group with members
        is upgraded by a join when the migration policy allows (`_upgrade`); otherwise it
        is not a consumer group (GROUP_ID_NOT_FOUND), nor is a share group."""
        if request.group_id in self.share.groups:
            return _not_a_consumer_group(request)
        classic = self._groups.get(request.group_id)
        if classic is not None and classic.state is not _S.EMPTY:
            refused = self._upgrade(classic, request, topics)
            if refused is not None:
                return refused
        elif classic is not None and request.member_epoch == JOIN_EPOCH:
            classic.cancel_timers()
            del self._groups[request.group_id]
            self.consumer.create(request.group_id, self._held_back_until(request.group_id))
        return self.consumer.heartbeat(request, topics)

    def _upgrade(
        self, classic: GroupMetadata, request: ConsumerHeartbeat, topics: Mapping[str, TopicInfo]
    ) -> ConsumerHeartbeatResult | None:
        """Turn a classic group with members into a consumer group for a joining member
        (Kafka's online upgrade); the refusal otherwise. Members parked in JoinGroup or
        SyncGroup are told REBALANCE_IN_PROGRESS and rejoin the consumer group."""
        if request.member_epoch != JOIN_EPOCH:
            return _not_a_consumer_group(request)
        refused = self.consumer.refusal(request)
        if refused is not None:
            return refused
        try:
            group = migration.upgrade(classic, self._config, topics)
        except migration.UpgradeRefused as upgrade_refused:
            return ConsumerHeartbeatResult(
                upgrade_refused.error,
                request.member_id,
                request.member_epoch,
                message=upgrade_refused.message,
            )
        for member in classic.members.values():
            self._fail_member(member, ErrorCode.REBALANCE_IN_PROGRESS)
        classic.cancel_timers()
        del self._groups[classic.group_id]
        group.held_back_until_ms = self._held_back_until(classic.group_id)
        self.consumer.groups[classic.group_id] = group
        for member in group.members.values():
            self.consumer.arm_session_expiry(group, member)
        return None

    def _downgrade(self, group: ConsumerGroup, leaving: ConsumerMember) -> bool:
        """The last consumer-protocol member leaves and only classic members remain: when
        the migration policy allows, the group becomes a classic group and rebalances, so
        the classic members rejoin and their leader assigns (Kafka's online downgrade)."""
        if not migration.may_downgrade(group, self._config):
            return False
        classic = migration.downgrade(group, leaving)
        self.consumer.unload(group.group_id)
        self._groups[group.group_id] = classic
        for member in classic.members.values():
            self._arm_session_expiry(classic, member)
        self._prepare_rebalance(classic)
        return True

    def _held_back_until(self, group_id: str) -> int:
        """Membership is not persisted, so after a restart or a move the members of the
        previous coordinator may still own partitions until their next heartbeat tells
        them they are unknown. A group taken over from the store hands out no partition
        until one session timeout after the takeover, by when every such member has either
        heard so or expired."""
        taken_over = self._taken_over_ms.pop(group_id, None)
        if taken_over is None:
            return 0
        return taken_over + self._config.consumer_session_timeout_ms

    def describe_consumer_group(
        self, group_id: str, topics: Mapping[str, TopicInfo]
    ) -> ConsumerGroupDescription | None:
        return self.consumer.describe(group_id, topics)

    # KIP-932 share groups

    def share_group_heartbeat(
        self, request: ShareHeartbeat, topics: Mapping[str, TopicInfo]
    ) -> ShareHeartbeatResult:
        """A consumer group, and a classic group with members or committed offsets, is not
        a share group (GROUP_ID_NOT_FOUND, as in Kafka 4); an Empty classic group without
        offsets (all that is left once its members went) becomes one on the first join."""
        classic = self._groups.get(request.group_id)
        if request.group_id in self.consumer.groups or (
            classic is not None
            and (classic.state is not _S.EMPTY or self._offsets.get(request.group_id))
        ):
            return ShareHeartbeatResult(
                ErrorCode.GROUP_ID_NOT_FOUND,
                request.member_id,
                request.member_epoch,
                message=f"Group {request.group_id} is not a share group.",
            )
        if classic is not None and request.member_epoch == JOIN_EPOCH:
            classic.cancel_timers()
            del self._groups[request.group_id]
        return self.share.heartbeat(request, topics)

    def describe_share_group(self, group_id: str) -> ShareGroupDescription | None:
        return self.share.describe(group_id)

    def validate_offset_fetch(self, group_id: str, member_id: str, member_epoch: int) -> ErrorCode:
        """OffsetFetch v9 names the member of a consumer group; admin fetches name none.
        A share group has no committed offsets (GROUP_ID_NOT_FOUND, as in Kafka)."""
        if group_id in self.share.groups:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group_id in self.consumer.groups:
            return self.consumer.validate_offset_fetch(group_id, member_id, member_epoch)
        return ErrorCode.NONE

    def describe_group(self, group_id: str) -> GroupDescription | None:
        group = self._groups.get(group_id)
        if group is None:
            return None
        protocol = group.protocol_name if group.state is _S.STABLE else None
        return GroupDescription(
            group_id=group_id,
            state=group.state.value,
            protocol_type=group.protocol_type or "",
            protocol_name=protocol or "",
            members=tuple(
                MemberDescription(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    metadata=m.metadata_for(protocol) if protocol else b"",
                    assignment=m.assignment if protocol else b"",
                )
                for m in group.members.values()
            ),
        )

    async def delete_groups(self, group_ids: Sequence[str]) -> dict[str, ErrorCode]:
        results: dict[str, ErrorCode] = {}
        for group_id in group_ids:
            group = self._groups.get(group_id)
            consumer_group = self.consumer.groups.get(group_id)
            share_group = self.share.groups.get(group_id)
            if not group_id:
                results[group_id] = ErrorCode.INVALID_GROUP_ID
            elif share_group is not None:
                if share_group.members:
                    results[group_id] = ErrorCode.NON_EMPTY_GROUP
                else:
                    self.share.delete(group_id)
                    results[group_id] = ErrorCode.NONE
            elif consumer_group is not None:
                if consumer_group.members:
                    results[group_id] = ErrorCode.NON_EMPTY_GROUP
                else:
                    self.consumer.delete(group_id)
                    self._offsets.pop(group_id, None)
                    await self._store.delete_group(group_id)
                    results[group_id] = ErrorCode.NONE
            elif group is None:
                results[group_id] = ErrorCode.GROUP_ID_NOT_FOUND
            elif group.state is not _S.EMPTY:
                results[group_id] = ErrorCode.NON_EMPTY_GROUP
            else:
                group.transition(GroupEvent.DELETED)
                group.cancel_timers()
                del self._groups[group_id]
                self._offsets.pop(group_id, None)
                await self._store.delete_group(group_id)
                results[group_id] = ErrorCode.NONE
        return results
