"""The handler contract: one async function per API key, registered with its versions.

ApiVersions advertises exactly what is registered here, so a broker never claims an API
it cannot serve.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mirrorsim.broker.handlers.broker_port import HandlerBroker
from mirrorsim.protocol.framing import RequestHeader


@dataclass(slots=True)
class ChannelThrottle:
    """How long a quota violation mutes the request's connection after its response is
    sent (KIP-219): the handler sets it, the connection applies it."""

    ms: int = 0
    exempt: bool = False
    """Set for requests Kafka never throttles on ``request_percentage`` (a follower's fetch)."""


@dataclass(frozen=True, slots=True)
class RequestContext:
    header: RequestHeader
    broker: HandlerBroker
    client_host: str
    principal: str = "User:ANONYMOUS"
    session: Any = None  # mirrorsim.broker.network.session.SecuritySession of the connection
    request_size: int = 0
    """The request's size on the wire (what a produce quota counts, as in Kafka)."""
    throttle: ChannelThrottle = field(default_factory=ChannelThrottle)


Handler = Callable[[RequestContext, Any], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class Registration:
    handler: Handler
    min_version: int
    max_version: int


HANDLERS: dict[int, Registration] = {}


def handles(api_key: int, *, min_version: int, max_version: int) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        HANDLERS[api_key] = Registration(handler, min_version, max_version)
        return handler

    return register
