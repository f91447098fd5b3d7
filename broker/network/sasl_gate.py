"""Which requests an unauthenticated connection may send (Kafka's SaslServerAuthenticator).

Before SASL completes only ApiVersions and SaslHandshake are served (SaslAuthenticate
once a mechanism was chosen); anything else closes the connection, as Kafka does.
"""

from __future__ import annotations

from mirrorsim.broker.network.connection import CloseConnection
from mirrorsim.broker.network.session import SaslState, SecuritySession
from mirrorsim.protocol.framing import API_VERSIONS_KEY

SASL_HANDSHAKE_KEY = 17
SASL_AUTHENTICATE_KEY = 36

_ALLOWED_BEFORE_AUTHENTICATION = {
    SaslState.AWAITING_HANDSHAKE: {API_VERSIONS_KEY, SASL_HANDSHAKE_KEY},
    SaslState.AUTHENTICATING: {SASL_AUTHENTICATE_KEY},
}


def check_authenticated(session: SecuritySession, api_key: int) -> None:
    if session.authenticated:
        return
    if api_key not in _ALLOWED_BEFORE_AUTHENTICATION.get(session.sasl_state, set()):
        raise CloseConnection(
            f"api key {api_key} received on listener {session.listener.name} "
            f"before SASL authentication ({session.sasl_state.value})"
        )
