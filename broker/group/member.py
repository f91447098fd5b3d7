"""One member of a classic group, with the replies it is still owed."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from mirrorsim.broker.group.clock import TimerHandle
from mirrorsim.broker.group.messages import JoinResult, SyncResult


@dataclass(slots=True, eq=False)
class MemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    assignment: bytes = b""
    is_new: bool = True
    awaiting_join: asyncio.Future[JoinResult] | None = None
    awaiting_sync: asyncio.Future[SyncResult] | None = None
    session_expiry: TimerHandle | None = field(default=None, repr=False)

    @property
    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata_for(self, protocol_name: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol_name:
                return metadata
        raise KeyError(protocol_name)

    def matches(self, protocols: tuple[tuple[str, bytes], ...]) -> bool:
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol that every member supports."""
        return next(name for name in self.protocol_names if name in candidates)

    def cancel_session_expiry(self) -> None:
        if self.session_expiry is not None:
            self.session_expiry.cancel()
            self.session_expiry = None
