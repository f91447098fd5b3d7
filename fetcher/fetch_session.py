"""The client side of a KIP-227 incremental fetch session, sans I/O.

The first request of a session is full (epoch 0) and lists every partition; the source
answers with a session id. Later requests carry that id and the next epoch, and list only
the partitions whose request changed since the source last saw them (a new fetch offset,
leader epoch or last fetched epoch), plus the partitions to forget. Any session error
(or a source that keeps no session, id 0) sends the next request full again.

The fetcher declares what it wants one partition at a time (:meth:`set`, :meth:`remove`)
rather than handing over its whole wish each round, so that an idle round, where nothing
changed, costs nothing per partition: the handler keeps the keys touched since the last
request and compares only those with what the source acknowledged. The changes a request
carries are kept aside until its answer arrives, so that a change made while the request
is outstanding goes in the next one, and a request that gets no answer (or an error) is
followed by a full one.
"""

from __future__ import annotations

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
    """What the next Fetch must say so that the source's session holds what is wanted.

    ``_known`` is what the source acknowledged holding; ``_touched`` the keys set or
    removed since the last request was built, the only ones that can differ from it.
    ``_sent`` is the last request built and not yet answered: its changes become known
    when its answer arrives, and its keys are compared again if another request is built
    first (the answer never came).
    """

    session_id: int = 0
    epoch: int = FULL_EPOCH
    _wanted: dict[Key, PartitionRequest] = field(default_factory=dict)
    _known: dict[Key, PartitionRequest] = field(default_factory=dict)
    _touched: dict[Key, None] = field(default_factory=dict)
    _sent: SessionRequest | None = None

    @property
    def wanted(self) -> int:
        """How many partitions the next request asks the session to hold."""
        return len(self._wanted)

    def set(self, key: Key, request: PartitionRequest) -> None:
        """Fetch ``key`` with ``request`` from the next request on."""
        self._wanted[key] = request
        self._touched[key] = None

    def remove(self, key: Key) -> None:
        """Stop fetching ``key``: the next request forgets it if the source holds it."""
        if self._wanted.pop(key, None) is not None:
            self._touched[key] = None

    def build(self) -> SessionRequest:
        """The next request: everything wanted if full, else only what differs from what
        the source holds (changes made since the last request, or carried by an earlier
        request whose answer never came)."""
        sent, self._sent = self._sent, None
        if sent is not None:
            self._touched.update(dict.fromkeys(sent.partitions))
            self._touched.update(dict.fromkeys(sent.forgotten))
        touched, self._touched = self._touched, {}
        if self.epoch == FULL_EPOCH:
            request = SessionRequest(0, FULL_EPOCH, dict(self._wanted), [])
        else:
            changed: dict[Key, PartitionRequest] = {}
            forgotten: list[Key] = []
            for key in touched:
                wanted = self._wanted.get(key)
                if wanted is None:
                    if key in self._known:
                        forgotten.append(key)
                elif self._known.get(key) != wanted:
                    changed[key] = wanted
            request = SessionRequest(self.session_id, self.epoch, changed, forgotten)
        self._sent = request
        return request

    def handle_response(self, error: ErrorCode | int, session_id: int) -> None:
        """Advance after the answer to the last request built; any top-level error (or an
        answer with no request outstanding) restarts with a full request."""
        sent, self._sent = self._sent, None
        if error != ErrorCode.NONE or session_id == 0 or sent is None:
            self.reset()
            return
        self.session_id = session_id
        if sent.is_full:
            self._known = dict(sent.partitions)
        else:
            self._known.update(sent.partitions)
            for key in sent.forgotten:
                del self._known[key]
        self.epoch = 1 if self.epoch >= _MAX_EPOCH else self.epoch + 1

    def reset(self) -> None:
        """Start a new session: the next request is full, whatever was sent before."""
        self.session_id = 0
        self.epoch = FULL_EPOCH
        self._known = {}
        self._touched = {}
        self._sent = None
