"""Per-connection security state: the listener, the SASL progress and the principal.

Kafka authenticates a connection once; every later request on it carries the principal
established here. On a SASL listener nothing but ApiVersions, SaslHandshake and
SaslAuthenticate is served until the exchange completes.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Protocol

from mirrorsim.broker.network.listener_spec import ListenerSpec

ANONYMOUS = "User:ANONYMOUS"


class SaslState(enum.Enum):
    NOT_APPLICABLE = "not applicable"
    """PLAINTEXT and SSL listeners: no SASL, the connection is authenticated on accept."""
    AWAITING_HANDSHAKE = "awaiting handshake"
    AUTHENTICATING = "authenticating"
    AUTHENTICATED = "authenticated"
    FAILED = "failed"


class ServerExchange(Protocol):
    username: str | None

    @property
    def complete(self) -> bool: ...

    def respond(self, message: bytes) -> bytes: ...


@dataclass(slots=True)
class SecuritySession:
    listener: ListenerSpec
    principal: str = ANONYMOUS
    sasl_state: SaslState = SaslState.NOT_APPLICABLE
    mechanism: str | None = None
    exchange: ServerExchange | None = field(default=None, repr=False)
    close_reason: str | None = None
    """Why the connection closes once the current request is answered (or, for a request
    that gets no response, once it is handled): a failed SASL exchange, where Kafka sends
    the error then closes, or a failed acks=0 produce, where closing is the only way to
    tell the producer to refresh its metadata."""
    on_close: dict[Hashable, Callable[[], Awaitable[None]]] = field(
        default_factory=dict, repr=False
    )
    """What to undo when the connection closes, by what it is about: a share consumer's
    session ends with its connection, as in Kafka, so its records go back to the group at
    once instead of when their locks expire. A later entry for the same key replaces the
    earlier one."""

    @classmethod
    def start(cls, listener: ListenerSpec, certificate_principal: str | None) -> SecuritySession:
        if listener.protocol.uses_sasl:
            return cls(listener, sasl_state=SaslState.AWAITING_HANDSHAKE)
        return cls(listener, principal=certificate_principal or ANONYMOUS)

    @property
    def authenticated(self) -> bool:
        return self.sasl_state in (SaslState.NOT_APPLICABLE, SaslState.AUTHENTICATED)


_RDN_NAMES = {
    "commonName": "CN",
    "organizationalUnitName": "OU",
    "organizationName": "O",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "countryName": "C",
    "domainComponent": "DC",
    "userId": "UID",
    "streetAddress": "STREET",
}


def principal_from_certificate(peercert: dict[str, object] | None) -> str | None:
    """Kafka's default SSL principal: ``User:`` + the subject in RFC 2253 order (most
    specific first, e.g. ``User:CN=client,OU=eng,O=acme``); None without a client cert."""
    if not peercert or "subject" not in peercert:
        return None
    subject = peercert["subject"]
    assert isinstance(subject, tuple)
    rdns = [
        "+".join(f"{_RDN_NAMES.get(key, key)}={_escape(value)}" for key, value in rdn)
        for rdn in subject
    ]
    return "User:" + ",".join(reversed(rdns))


def _escape(value: str) -> str:
    escaped = "".join(f"\\{c}" if c in ',+"\\<>;=' else c for c in value)
    if escaped.startswith((" ", "#")):
        escaped = "\\" + escaped
    if escaped.endswith(" ") and not escaped.endswith("\\ "):
        escaped = escaped[:-1] + "\\ "
    return escaped
