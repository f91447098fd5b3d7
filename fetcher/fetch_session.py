"""The client side of a KIP-227 incremental fetch session, sans I/O.

The first request of a session is full (epoch 0) and lists every partition; the source
answers with a session id. Later requests carry that id and the next epoch, and list only
the partitions whose request changed since the source last saw them (a new fetch offset,
leader epoch or last fetched epoch), plus the partitions to forget. Any session error
(or a source that keeps no session, id 0) sends the next request full again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from mirrorsim.protocol.errors import ErrorCode

FULL_EPOCH = 0
_MAX_EPOCH = 2**31 - 1


@dataclass(frozen=True, slots=True)
class PartitionRequest:
    """What one partition asks of the source in a Fetch."""

    fetch_offset: int
    current_leader_epoch: int
    last_fetched_epoch: int


Key = tuple[str, int]


@dataclass(frozen=True, slots=True)
class SessionRequest:
    session_id: int
    epoch: int
    partitions: dict[Key, PartitionRequest]
    forgotten: list[Key]

    @property
    def is_full(self) -> bool:
        return self.epoch == FULL_EPOCH


@dataclass(slots=True)
class FetchSessionHandler:
    session_id: int = 0
    epoch: int = FULL_EPOCH
    _known: dict[Key, PartitionRequest] = field(default_factory=dict)
    _pending: dict[Key, PartitionRequest] = field(default_factory=dict)

    def build(self, wanted: Mapping[Key, PartitionRequest]) -> SessionRequest:
        self._pending = dict(wanted)
        if self.epoch == FULL_EPOCH:
            return SessionRequest(0, FULL_EPOCH, dict(wanted), [])
        changed = {k: v for k, v in wanted.items() if self._known.get(k) != v}
        forgotten = [k for k in self._known if k not in wanted]
        return SessionRequest(self.session_id, self.epoch, changed, forgotten)

    def handle_response(self, error: ErrorCode | int, session_id: int) -> None:
        """Advance after a response; any top-level error restarts with a full request."""
        if error != ErrorCode.NONE or session_id == 0:
            self.reset()
            return
        self.session_id = session_id
        self._known = self._pending
        self.epoch = 1 if self.epoch >= _MAX_EPOCH else self.epoch + 1

    def reset(self) -> None:
        self.session_id = 0
        self.epoch = FULL_EPOCH
        self._known = {}
