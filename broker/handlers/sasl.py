"""SaslHandshake (17, v1) and SaslAuthenticate (36, v0..v2).

The handshake picks a mechanism among ``sasl.enabled.mechanisms``; SaslAuthenticate then
carries the mechanism's messages. PLAIN users come from ``sasl.users`` and, as in Kafka,
from the ``user_<name>="<password>"`` options of the listener's
``listener.name.<listener>.plain.sasl.jaas.config``; SCRAM users from the metadata store.
A failed exchange answers SASL_AUTHENTICATION_FAILED and closes the connection, as Kafka
does. (SaslHandshake v0, which switches to unframed SASL tokens, is
not offered; every current client uses v1.)
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from mirrorsim.broker.auth.credentials import scram_credential
from mirrorsim.broker.auth.scram import (
    SCRAM_HASHES,
    AuthenticationFailed,
    PlainServerExchange,
    ScramServerExchange,
)
from mirrorsim.broker.config import listener_jaas_config_name
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.broker_port import HandlerBroker
from mirrorsim.broker.handlers.response import respond
from mirrorsim.broker.network.sasl_gate import SASL_AUTHENTICATE_KEY, SASL_HANDSHAKE_KEY
from mirrorsim.broker.network.session import SaslState, SecuritySession, ServerExchange
from mirrorsim.client.sasl import jaas_options
from mirrorsim.protocol.errors import ErrorCode

SASL_FAILED = "SASL authentication failed"


JAAS_USER_PREFIX = "user_"


def plain_users(value: str | None) -> dict[str, str]:
    """``sasl.users``: ``alice:alice-secret,bob:bob-secret`` (a password may hold ':')."""
    users: dict[str, str] = {}
    for entry in (value or "").split(","):
        name, sep, password = entry.strip().partition(":")
        if sep and name:
            users[name] = password
    return users


@handles(SASL_HANDSHAKE_KEY, min_version=1, max_version=1)
async def sasl_handshake(ctx: RequestContext, body: Any) -> Any:
    session: SecuritySession = ctx.session
    enabled: list[str] = list(ctx.broker.config("sasl.enabled.mechanisms"))
    if session.sasl_state != SaslState.AWAITING_HANDSHAKE:
        session.close_reason = None if session.authenticated else SASL_FAILED
        return respond(body, {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": enabled})
    if body.mechanism not in enabled:
        session.sasl_state = SaslState.FAILED
        session.close_reason = SASL_FAILED
        return respond(
            body, {"error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM, "mechanisms": enabled}
        )
    session.mechanism = body.mechanism
    session.exchange = _exchange(ctx.broker, body.mechanism, session.listener.name)
    session.sasl_state = SaslState.AUTHENTICATING
    return respond(body, {"error_code": ErrorCode.NONE, "mechanisms": enabled})


def jaas_plain_users(jaas_config: str | None) -> dict[str, str]:
    """The ``user_<name>="<password>"`` options of a PlainLoginModule line."""
    return {
        key.removeprefix(JAAS_USER_PREFIX): value
        for key, value in jaas_options(jaas_config or "").items()
        if key.startswith(JAAS_USER_PREFIX) and len(key) > len(JAAS_USER_PREFIX)
    }


def _exchange(broker: HandlerBroker, mechanism: str, listener: str) -> ServerExchange:
    if mechanism == "PLAIN":
        jaas = broker.static_configs.get(listener_jaas_config_name(listener, mechanism))
        users = {**jaas_plain_users(jaas), **plain_users(broker.config("sasl.users"))}
        return PlainServerExchange(users)
    return ScramServerExchange(
        mechanism, lambda username: scram_credential(broker.store, username, mechanism)
    )


@handles(SASL_AUTHENTICATE_KEY, min_version=0, max_version=2)
async def sasl_authenticate(ctx: RequestContext, body: Any) -> Any:
    session: SecuritySession = ctx.session
    if session.sasl_state != SaslState.AUTHENTICATING or session.exchange is None:
        session.close_reason = SASL_FAILED
        return _authenticate_response(
            body, ErrorCode.ILLEGAL_SASL_STATE, "SaslAuthenticate outside a SASL exchange"
        )
    exchange = session.exchange
    try:
        if session.mechanism in SCRAM_HASHES:
            challenge = await asyncio.to_thread(exchange.respond, bytes(body.auth_bytes))
        else:
            challenge = exchange.respond(bytes(body.auth_bytes))
    except (AuthenticationFailed, UnicodeDecodeError) as exc:
        session.sasl_state = SaslState.FAILED
        session.exchange = None
        session.close_reason = SASL_FAILED
        return _authenticate_response(body, ErrorCode.SASL_AUTHENTICATION_FAILED, str(exc))
    if exchange.complete:
        session.principal = f"User:{exchange.username}"
        session.sasl_state = SaslState.AUTHENTICATED
        session.exchange = None
    return _authenticate_response(body, ErrorCode.NONE, None, challenge)


def _authenticate_response(
    body: Any, code: ErrorCode, message: str | None, auth_bytes: bytes = b""
) -> Any:
    return respond(
        body,
        {
            "error_code": code,
            "error_message": message,
            "auth_bytes": auth_bytes,
            "session_lifetime": timedelta(0),
        },
    )
