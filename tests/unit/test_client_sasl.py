"""SASL mechanisms as sans-I/O exchanges, checked against RFC vectors and a scripted server."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.client.sasl import (
    PlainExchange,
    SaslAuthenticationError,
    SaslSettings,
    ScramExchange,
    credentials_from_jaas,
    new_exchange,
)


def test_plain_sends_one_message() -> None:
    exchange = PlainExchange("alice", "secret")
    assert exchange.initial_response() == b"\0alice\0secret"
    assert exchange.respond(b"") is None


def test_scram_sha256_matches_rfc7677() -> None:
    exchange = ScramExchange("sha256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    assert exchange.initial_response() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    server_first = (
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    assert exchange.respond(server_first) == (
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert exchange.respond(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=") is None


def test_scram_rejects_a_forged_server_signature() -> None:
    exchange = ScramExchange("sha256", "user", "pencil", nonce="abc")
    exchange.initial_response()
    exchange.respond(b"r=abcdef,s=" + base64.b64encode(b"salt") + b",i=4096")
    with pytest.raises(SaslAuthenticationError):
        exchange.respond(b"v=" + base64.b64encode(b"x" * 32))


def test_scram_rejects_a_nonce_the_client_did_not_start() -> None:
    exchange = ScramExchange("sha512", "user", "pencil", nonce="abc")
    exchange.initial_response()
    with pytest.raises(SaslAuthenticationError):
        exchange.respond(b"r=zzz,s=c2FsdA==,i=4096")


@given(
    username=st.text(min_size=1, max_size=20),
    password=st.text(min_size=1, max_size=20),
    hash_name=st.sampled_from(["sha256", "sha512"]),
)
def test_scram_completes_against_a_server_that_knows_the_password(
    username: str, password: str, hash_name: str
) -> None:
    exchange = ScramExchange(hash_name, username, password)
    client_first = exchange.initial_response().decode()
    client_first_bare = client_first[3:]
    client_nonce = client_first_bare.rsplit("r=", 1)[1]
    salt, iterations = b"pepper", 64
    server_first = f"r={client_nonce}srv,s={base64.b64encode(salt).decode()},i={iterations}"
    client_final = exchange.respond(server_first.encode())
    assert client_final is not None
    without_proof, proof = client_final.decode().rsplit(",p=", 1)
    auth_message = f"{client_first_bare},{server_first},{without_proof}".encode()
    salted = hashlib.pbkdf2_hmac(hash_name, password.encode(), salt, iterations)
    client_key = hmac.digest(salted, b"Client Key", hash_name)
    stored_key = hashlib.new(hash_name, client_key).digest()
    signature = hmac.digest(stored_key, auth_message, hash_name)
    recovered = bytes(a ^ b for a, b in zip(base64.b64decode(proof), signature, strict=True))
    assert hashlib.new(hash_name, recovered).digest() == stored_key
    server_key = hmac.digest(salted, b"Server Key", hash_name)
    verifier = base64.b64encode(hmac.digest(server_key, auth_message, hash_name))
    assert exchange.respond(b"v=" + verifier) is None


def test_credentials_come_from_a_jaas_line() -> None:
    line = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="mirror-admin" password="p\\"w";'
    )
    assert credentials_from_jaas(line) == ("mirror-admin", 'p"w')
    with pytest.raises(ValueError, match="password"):
        credentials_from_jaas('PlainLoginModule required username="a";')


def test_unknown_mechanisms_are_refused() -> None:
    with pytest.raises(ValueError, match="GSSAPI"):
        SaslSettings("GSSAPI", "a", "b")
    assert isinstance(new_exchange(SaslSettings("PLAIN", "a", "b")), PlainExchange)
