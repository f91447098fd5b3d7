"""Share sessions (KIP-932): which partitions a share consumer fetches from this broker.

A share consumer keeps one session per broker it fetches from, keyed by its group and
member id. ShareFetch with epoch 0 opens it with the full list of partitions (replacing
one the member already had, whose acquired records go back to the group); later
ShareFetch and ShareAcknowledge requests carry the next epoch, and a ShareFetch adds
partitions and forgets others, so a steady consumer sends no partition list at all. Epoch
-1 closes the session after its acknowledgements are applied. The epoch sequence is shared
by both APIs and wraps from the largest int32 to 1, as Kafka's ``ShareRequestMetadata``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

from mirrorsim.protocol.errors import ErrorCode

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
_MAX_EPOCH = 2**31 - 1


@dataclass(frozen=True, slots=True)
class SharePartitionKey:
    """A partition of a share session, named by topic id as ShareFetch names it."""

    topic_id: uuid.UUID
    partition: int


@dataclass(slots=True)
class ShareSession:
    group_id: str
    member_id: str
    next_epoch: int = 1
    partitions: set[SharePartitionKey] = field(default_factory=set)
    connection: object = None
    """The connection that opened the session; it ends with that connection."""


class ShareSessionError(Exception):
    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def next_epoch(epoch: int) -> int:
    return 1 if epoch >= _MAX_EPOCH else epoch + 1


class ShareSessionCache:
    """Every open share session of this broker, at most ``capacity`` of them (Kafka sizes
    the cache as ``group.share.max.groups`` x ``group.share.max.size``)."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._sessions: dict[tuple[str, str], ShareSession] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.get((group_id, member_id))

    def sessions(self) -> list[ShareSession]:
        return list(self._sessions.values())

    def open(
        self,
        group_id: str,
        member_id: str,
        partitions: Iterable[SharePartitionKey],
        connection: object = None,
    ) -> tuple[ShareSession, ShareSession | None]:
        """Epoch 0: a new session with these partitions, and the one it replaces (whose
        acquired records the caller releases)."""
        key = (group_id, member_id)
        replaced = self._sessions.pop(key, None)
        if len(self._sessions) >= self._capacity:
            if replaced is not None:
                self._sessions[key] = replaced
            raise ShareSessionError(
                ErrorCode.SHARE_SESSION_LIMIT_REACHED,
                f"This broker already holds {self._capacity} share sessions",
            )
        session = ShareSession(
            group_id, member_id, partitions=set(partitions), connection=connection
        )
        self._sessions[key] = session
        return session, replaced

    def advance(self, group_id: str, member_id: str, epoch: int) -> ShareSession:
        """A request carrying ``epoch`` (neither initial nor final) moves the session on."""
        session = self._expect(group_id, member_id, epoch)
        session.next_epoch = next_epoch(epoch)
        return session

    def close(self, group_id: str, member_id: str) -> ShareSession:
        """Epoch -1: the member's session ends; the caller releases what it acquired."""
        session = self._sessions.pop((group_id, member_id), None)
        if session is None:
            raise _not_found(group_id, member_id)
        return session

    def disconnect(self, group_id: str, member_id: str, connection: object) -> ShareSession | None:
        """The connection closed: its session of the member ends, unless the member has
        opened a new one on another connection since."""
        key = (group_id, member_id)
        session = self._sessions.get(key)
        if session is None or session.connection is not connection:
            return None
        del self._sessions[key]
        return session

    def _expect(self, group_id: str, member_id: str, epoch: int) -> ShareSession:
        session = self._sessions.get((group_id, member_id))
        if session is None:
            raise _not_found(group_id, member_id)
        if epoch != session.next_epoch:
            raise ShareSessionError(
                ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                f"Share session epoch {epoch} is not the expected {session.next_epoch}",
            )
        return session


def _not_found(group_id: str, member_id: str) -> ShareSessionError:
    return ShareSessionError(
        ErrorCode.SHARE_SESSION_NOT_FOUND,
        f"No share session of member {member_id} of group {group_id}",
    )
