"""SASL client mechanisms as sans-I/O exchanges: challenge bytes in, response bytes out.

The connection drives them over SaslHandshake + SaslAuthenticate, so the mechanisms never
touch a socket and can be tested against a scripted server.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from typing import Protocol

SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_JAAS_OPTION = re.compile(r"""(\w+)\s*=\s*"((?:[^"\\]|\\.)*)\"""")


class SaslAuthenticationError(Exception):
    """The broker rejected the credentials or the exchange went wrong."""


@dataclass(frozen=True, slots=True)
class SaslSettings:
    mechanism: str
    username: str
    password: str

    def __post_init__(self) -> None:
        if self.mechanism not in SUPPORTED_MECHANISMS:
            raise ValueError(
                f"sasl.mechanism {self.mechanism!r} is not one of {', '.join(SUPPORTED_MECHANISMS)}"
            )


def jaas_options(jaas_config: str) -> dict[str, str]:
    """The ``key="value"`` options of a JAAS login module line, quotes unescaped."""
    return {key: value.replace('\\"', '"') for key, value in _JAAS_OPTION.findall(jaas_config)}


def credentials_from_jaas(jaas_config: str) -> tuple[str, str]:
    """(username, password) from a ``sasl.jaas.config`` line (Plain or Scram LoginModule)."""
    options = jaas_options(jaas_config)
    try:
        return options["username"], options["password"]
    except KeyError as exc:
        raise ValueError(f"sasl.jaas.config has no {exc.args[0]} option") from exc


class SaslExchange(Protocol):
    def initial_response(self) -> bytes: ...

    def respond(self, challenge: bytes) -> bytes | None:
        """The next client message, or None when the exchange is complete."""
        ...


class PlainExchange:
    """RFC 4616: one message, authorization id empty."""

    def __init__(self, username: str, password: str) -> None:
        self._message = b"\0" + username.encode() + b"\0" + password.encode()

    def initial_response(self) -> bytes:
        return self._message

    def respond(self, challenge: bytes) -> bytes | None:
        return None


class ScramExchange:
    """RFC 5802 client side (no channel binding), as Kafka's SCRAM-SHA-256/512 expect."""

    def __init__(
        self, hash_name: str, username: str, password: str, nonce: str | None = None
    ) -> None:
        self._hash = hash_name
        self._password = password.encode()
        self._nonce = nonce or secrets.token_urlsafe(18)
        safe_name = username.replace("=", "=3D").replace(",", "=2C")
        self._client_first_bare = f"n={safe_name},r={self._nonce}"
        self._server_signature: bytes | None = None

    def initial_response(self) -> bytes:
        return ("n,," + self._client_first_bare).encode()

    def respond(self, challenge: bytes) -> bytes | None:
        if self._server_signature is None:
            return self._client_final(challenge.decode())
        _verify_server_final(challenge.decode(), self._server_signature)
        return None

    def _client_final(self, server_first: str) -> bytes:
        attrs = _scram_attributes(server_first)
        if "e" in attrs:
            raise SaslAuthenticationError(f"SCRAM server error: {attrs['e']}")
        nonce, salt, iterations = attrs["r"], base64.b64decode(attrs["s"]), int(attrs["i"])
        if not nonce.startswith(self._nonce):
            raise SaslAuthenticationError("SCRAM server nonce does not extend the client nonce")
        salted = hashlib.pbkdf2_hmac(self._hash, self._password, salt, iterations)
        client_key = hmac.digest(salted, b"Client Key", self._hash)
        stored_key = hashlib.new(self._hash, client_key).digest()
        without_proof = f"c={base64.b64encode(b'n,,').decode()},r={nonce}"
        auth_message = f"{self._client_first_bare},{server_first},{without_proof}".encode()
        client_signature = hmac.digest(stored_key, auth_message, self._hash)
        proof = bytes(a ^ b for a, b in zip(client_key, client_signature, strict=True))
        server_key = hmac.digest(salted, b"Server Key", self._hash)
        self._server_signature = hmac.digest(server_key, auth_message, self._hash)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()


def _verify_server_final(server_final: str, expected_signature: bytes) -> None:
    attrs = _scram_attributes(server_final)
    if "e" in attrs:
        raise SaslAuthenticationError(f"SCRAM server error: {attrs['e']}")
    if not hmac.compare_digest(base64.b64decode(attrs.get("v", "")), expected_signature):
        raise SaslAuthenticationError("SCRAM server signature does not match")


def _scram_attributes(message: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in message.split(",") if "=" in part)


def new_exchange(settings: SaslSettings) -> SaslExchange:
    if settings.mechanism == "PLAIN":
        return PlainExchange(settings.username, settings.password)
    hash_name = "sha256" if settings.mechanism == "SCRAM-SHA-256" else "sha512"
    return ScramExchange(hash_name, settings.username, settings.password)
