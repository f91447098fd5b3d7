"""SCRAM-SHA-256/512 server side (RFC 5802, no channel binding) and PLAIN (RFC 4616).

Sans-I/O: the SaslAuthenticate handler feeds client messages in and sends the returned
challenges back. The broker stores only what Kafka stores (salt, StoredKey, ServerKey,
iterations), never a password, so a leaked metadata database does not leak passwords.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass

SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MIN_ITERATIONS = 4096
"""Kafka refuses SCRAM iterations below 4096."""
MAX_ITERATIONS = 16384
"""... and above 16384 (``ScramMechanism.maxIterations``)."""


class AuthenticationFailed(Exception):
    """Credentials or the exchange were wrong; the client sees SASL_AUTHENTICATION_FAILED."""


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def scram_credential(
    mechanism: str, password: str, iterations: int = MIN_ITERATIONS, salt: bytes | None = None
) -> ScramCredential:
    """What the broker keeps for a SCRAM user (as AlterUserScramCredentials computes it)."""
    hash_name = SCRAM_HASHES[mechanism]
    salt = salt if salt is not None else secrets.token_bytes(32)
    salted = hashlib.pbkdf2_hmac(hash_name, password.encode(), salt, iterations)
    return credential_from_salted_password(mechanism, salt, salted, iterations)


def credential_from_salted_password(
    mechanism: str, salt: bytes, salted_password: bytes, iterations: int
) -> ScramCredential:
    """The stored form of a salted password, the way AlterUserScramCredentials sends it
    (the client salts, so the password itself never reaches the broker)."""
    hash_name = SCRAM_HASHES[mechanism]
    client_key = hmac.digest(salted_password, b"Client Key", hash_name)
    stored_key = hashlib.new(hash_name, client_key).digest()
    server_key = hmac.digest(salted_password, b"Server Key", hash_name)
    return ScramCredential(salt, stored_key, server_key, iterations)


def _attributes(message: str) -> dict[str, str]:
    attributes: dict[str, str] = {}
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if not sep or len(key) != 1:
            raise AuthenticationFailed(f"Invalid SCRAM message attribute {part!r}")
        attributes[key] = value
    return attributes


def _unescape_name(name: str) -> str:
    return name.replace("=2C", ",").replace("=3D", "=")


CredentialLookup = Callable[[str], ScramCredential | None]


class ScramServerExchange:
    """Two round trips: client-first -> server-first, client-final -> server-final."""

    def __init__(self, mechanism: str, lookup: CredentialLookup) -> None:
        self._hash = SCRAM_HASHES[mechanism]
        self._lookup = lookup
        self._state = "first"
        self._credential: ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""
        self.username: str | None = None

    @property
    def complete(self) -> bool:
        return self._state == "done"

    def respond(self, message: bytes) -> bytes:
        text = message.decode("utf-8", errors="strict")
        if self._state == "first":
            return self._client_first(text)
        if self._state == "final":
            return self._client_final(text)
        raise AuthenticationFailed("SCRAM exchange already complete")

    def _client_first(self, text: str) -> bytes:
        gs2_header, sep, bare = text.partition(",,")
        if not sep or gs2_header.split(",")[0] not in ("n", "y"):
            raise AuthenticationFailed("Invalid SCRAM client-first message")
        attributes = _attributes(bare)
        if "n" not in attributes or "r" not in attributes:
            raise AuthenticationFailed("SCRAM client-first message lacks name or nonce")
        username = _unescape_name(attributes["n"])
        credential = self._lookup(username)
        if credential is None:
            raise AuthenticationFailed("Authentication failed: Invalid user credentials")
        self.username = username
        self._credential = credential
        self._client_first_bare = bare
        self._nonce = attributes["r"] + secrets.token_urlsafe(18)
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={credential.iterations}"
        self._state = "final"
        return self._server_first.encode()

    def _client_final(self, text: str) -> bytes:
        assert self._credential is not None
        without_proof, sep, proof_text = text.rpartition(",p=")
        if not sep:
            raise AuthenticationFailed("SCRAM client-final message lacks a proof")
        attributes = _attributes(without_proof)
        if attributes.get("r") != self._nonce:
            raise AuthenticationFailed("Invalid SCRAM nonce")
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        client_signature = hmac.digest(self._credential.stored_key, auth_message, self._hash)
        try:
            proof = base64.b64decode(proof_text, validate=True)
        except ValueError:
            raise AuthenticationFailed("Invalid SCRAM proof encoding") from None
        if len(proof) != len(client_signature):
            raise AuthenticationFailed("Authentication failed: Invalid user credentials")
        client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
        if not hmac.compare_digest(
            hashlib.new(self._hash, client_key).digest(), self._credential.stored_key
        ):
            raise AuthenticationFailed("Authentication failed: Invalid user credentials")
        server_signature = hmac.digest(self._credential.server_key, auth_message, self._hash)
        self._state = "done"
        return b"v=" + base64.b64encode(server_signature)


class PlainServerExchange:
    """One message: ``authzid NUL authcid NUL passwd``; authzid must be empty or authcid."""

    def __init__(self, users: dict[str, str]) -> None:
        self._users = users
        self.username: str | None = None
        self.complete = False

    def respond(self, message: bytes) -> bytes:
        parts = message.split(b"\0")
        if len(parts) != 3:
            raise AuthenticationFailed("Invalid SASL/PLAIN message")
        authzid, authcid, password = (p.decode("utf-8", errors="replace") for p in parts)
        if authzid and authzid != authcid:
            raise AuthenticationFailed("Authentication failed: authorization id mismatch")
        expected = self._users.get(authcid)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise AuthenticationFailed("Authentication failed: Invalid username or password")
        self.username = authcid
        self.complete = True
        return b""
