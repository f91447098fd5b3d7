"""A request body that encodes itself, sent by a client without building kio entities.

Most requests are kio entities that ``framing`` encodes. A fetcher's Fetch is not: it
names every partition whose position moved since the last one, so a live mirror sends
one such entry per appended batch, and building and encoding an entity per entry cost
more than taking the batch it asks for. Such a body is built for the version the
connection negotiated and says what the framing asks of a request: its API key, its
version, whether that version is flexible (for the request header) and its bytes.
"""

from __future__ import annotations

import dataclasses
from abc import abstractmethod

from mirrorsim.protocol.messages.encoded_message import EncodedMessage, OneVersion


class EncodedRequest(EncodedMessage):
    """A request body that encodes itself at its own version."""

    __slots__ = ()

    @property
    @abstractmethod
    def api_version(self) -> int: ...

    @abstractmethod
    def encoded_body(self) -> bytes:
        """The body's bytes, without header or size prefix."""


@dataclasses.dataclass(frozen=True, slots=True)
class VersionedRequest(OneVersion, EncodedRequest):
    """An encoded request of one version of one API: what the hand-written request
    encoders have in common."""

    @property
    def api_version(self) -> int:
        return self.version
