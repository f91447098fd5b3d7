"""The broker's SCRAM and PLAIN exchanges against the project's client mechanisms."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mirrorsim.broker.auth.scram import (
    AuthenticationFailed,
    PlainServerExchange,
    ScramServerExchange,
    scram_credential,
)
from mirrorsim.broker.network.session import principal_from_certificate
from mirrorsim.client.sasl import PlainExchange, ScramExchange

MECHANISMS = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
printable = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=12)


def run_scram(mechanism: str, user: str, password: str, stored_password: str) -> None:
    credential = scram_credential(mechanism, stored_password, salt=b"salt")
    server = ScramServerExchange(mechanism, {user: credential}.get)
    client = ScramExchange(MECHANISMS[mechanism], user, password)
    server_first = server.respond(client.initial_response())
    client_final = client.respond(server_first)
    assert client_final is not None
    server_final = server.respond(client_final)
    assert client.respond(server_final) is None
    assert server.complete and server.username == user


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(list(MECHANISMS)), printable, printable)
def test_scram_round_trip_with_the_client(mechanism: str, user: str, password: str) -> None:
    run_scram(mechanism, user, password, password)


@pytest.mark.parametrize("mechanism", list(MECHANISMS))
def test_scram_wrong_password_fails(mechanism: str) -> None:
    with pytest.raises(AuthenticationFailed):
        run_scram(mechanism, "alice", "wrong", "right")


def test_scram_unknown_user_fails() -> None:
    server = ScramServerExchange("SCRAM-SHA-256", lambda _: None)
    with pytest.raises(AuthenticationFailed):
        server.respond(ScramExchange("sha256", "ghost", "x").initial_response())


def test_plain() -> None:
    server = PlainServerExchange({"alice": "secret"})
    server.respond(PlainExchange("alice", "secret").initial_response())
    assert server.complete and server.username == "alice"
    with pytest.raises(AuthenticationFailed):
        PlainServerExchange({"alice": "secret"}).respond(b"\0alice\0nope")
    with pytest.raises(AuthenticationFailed):
        PlainServerExchange({"alice": "secret"}).respond(b"bob\0alice\0secret")


def test_certificate_principal_is_the_rfc2253_subject() -> None:
    peercert = {
        "subject": (
            (("countryName", "US"),),
            (("organizationName", "Acme, Inc"),),
            (("commonName", "client"),),
        )
    }
    assert principal_from_certificate(peercert) == "User:CN=client,O=Acme\\, Inc,C=US"
    assert principal_from_certificate(None) is None
