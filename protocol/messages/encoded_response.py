"""A response body that arrives at the framing layer already encoded, in whole or in part.

Most responses are kio entities that ``framing`` encodes. Two are not, because building
and encoding an entity per entry costs more than the request it answers: a Metadata
response's kept topic entries and a Produce response, which carries one short entry per
partition of every Produce request. Such a body says what the layers between the handler
and the socket ask of a response: its API key and whether its version is flexible (for
the response header), its throttle time (which a quota may raise), the error codes it
carries (for the request metrics) and its bytes.
"""

from __future__ import annotations

import dataclasses
from abc import abstractmethod
from collections.abc import Iterable
from datetime import timedelta
from typing import Self

from mirrorsim.protocol.messages.encoded_message import EncodedMessage, OneVersion


class EncodedResponse(EncodedMessage):
    """A response body that encodes itself."""

    __slots__ = ()

    @property
    @abstractmethod
    def throttle_time(self) -> timedelta: ...

    @abstractmethod
    def with_throttle_time(self, throttle_time: timedelta) -> Self: ...

    @abstractmethod
    def error_code_counts(self) -> Iterable[tuple[int, int]]:
        """(error code, how many) over every ``error_code`` field the body carries, as
        Kafka's ``errorCounts`` counts them for the request metrics."""

    @abstractmethod
    def encoded_body(self) -> list[bytes | bytearray]:
        """The body's bytes as parts to write in order, without header or size prefix."""


@dataclasses.dataclass(frozen=True, slots=True)
class VersionedResponse(OneVersion, EncodedResponse):
    """An encoded response of one version of one API, its throttle time a field: what
    the hand-written encoders have in common."""

    throttle_ms: int = dataclasses.field(default=0, kw_only=True)

    @property
    def throttle_time(self) -> timedelta:
        return timedelta(milliseconds=self.throttle_ms)

    def with_throttle_time(self, throttle_time: timedelta) -> Self:
        return dataclasses.replace(self, throttle_ms=throttle_time // timedelta(milliseconds=1))
