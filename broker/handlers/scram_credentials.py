"""DescribeUserScramCredentials (50; no users, or none named: all) and
AlterUserScramCredentials (51).

Kafka's rules: describing needs DESCRIBE on the cluster, altering ALTER on the cluster
(CLUSTER_AUTHORIZATION_FAILED); a (user, mechanism) named twice in one request is
DUPLICATE_RESOURCE; an unknown mechanism UNSUPPORTED_SASL_MECHANISM; an empty name or
iterations outside 4096..16384 UNACCEPTABLE_CREDENTIAL; deleting or describing a user
without credentials RESOURCE_NOT_FOUND. The client sends the salted password, never the
password; the broker keeps salt, StoredKey, ServerKey and iterations in the metadata store,
which every broker of the cluster reads at its next SASL handshake.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from mirrorsim.broker.auth.credentials import (
    delete_scram_credential,
    scram_users,
    upsert_scram_credential,
)
from mirrorsim.broker.auth.enforcement import denial
from mirrorsim.broker.auth.scram import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    credential_from_salted_password,
)
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.response import NO_THROTTLE, error_fields, respond
from mirrorsim.protocol.acl import CLUSTER_RESOURCE_NAME, AclOperation, ResourceType
from mirrorsim.protocol.errors import ErrorCode, KafkaError

DESCRIBE_USER_SCRAM_CREDENTIALS_KEY = 50
ALTER_USER_SCRAM_CREDENTIALS_KEY = 51
MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
"""Kafka's ``ScramMechanism`` wire codes."""
MECHANISM_CODES = {name: code for code, name in MECHANISMS.items()}


@handles(DESCRIBE_USER_SCRAM_CREDENTIALS_KEY, min_version=0, max_version=0)
async def handle_describe(ctx: RequestContext, body: Any) -> Any:
    denied = await denial(ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME)
    if denied is not None:
        return respond(body, {"throttle_time": NO_THROTTLE, **error_fields(denied), "results": []})
    users = await asyncio.to_thread(scram_users, ctx.broker.store)
    wanted = [u.name for u in body.users] if body.users else list(users)
    counts = Counter(wanted)
    results = []
    for name in dict.fromkeys(wanted):
        error = None
        if counts[name] > 1:
            error = KafkaError(ErrorCode.DUPLICATE_RESOURCE, f"Cannot describe user {name} twice")
        elif name not in users:
            error = KafkaError(
                ErrorCode.RESOURCE_NOT_FOUND,
                f"Attempt to describe a user credential that does not exist: {name}",
            )
        infos = [] if error else users[name]
        results.append(
            {
                "user": name,
                **error_fields(error),
                "credential_infos": [
                    {"mechanism": MECHANISM_CODES[m], "iterations": i}
                    for m, i in infos
                    if m in MECHANISM_CODES
                ],
            }
        )
    return respond(body, {"throttle_time": NO_THROTTLE, **error_fields(None), "results": results})


@handles(ALTER_USER_SCRAM_CREDENTIALS_KEY, min_version=0, max_version=0)
async def handle_alter(ctx: RequestContext, body: Any) -> Any:
    changes = [("delete", d) for d in body.deletions] + [("upsert", u) for u in body.upsertions]
    denied = await denial(ctx, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME)
    pairs = Counter((change.name, int(change.mechanism)) for _, change in changes)
    errors: dict[str, KafkaError | None] = {}
    for kind, change in changes:
        if errors.get(change.name) is not None:
            continue
        error = denied or _refusal(kind, change, pairs)
        if error is None:
            error = await asyncio.to_thread(_apply, ctx.broker.store, kind, change)
        errors[change.name] = error
    results = [{"user": name, **error_fields(error)} for name, error in errors.items()]
    return respond(body, {"throttle_time": NO_THROTTLE, "results": results})


def _refusal(kind: str, change: Any, pairs: Counter[tuple[str, int]]) -> KafkaError | None:
    if not change.name:
        return KafkaError(ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
    if pairs[(change.name, int(change.mechanism))] > 1:
        return KafkaError(
            ErrorCode.DUPLICATE_RESOURCE,
            "A user credential cannot be altered twice in the same request",
        )
    if int(change.mechanism) not in MECHANISMS:
        return KafkaError(ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
    if kind == "upsert" and int(change.iterations) < MIN_ITERATIONS:
        return KafkaError(ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
    if kind == "upsert" and int(change.iterations) > MAX_ITERATIONS:
        return KafkaError(ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
    return None


def _apply(store: Any, kind: str, change: Any) -> KafkaError | None:
    mechanism = MECHANISMS[int(change.mechanism)]
    if kind == "delete":
        if delete_scram_credential(store, change.name, mechanism):
            return None
        return KafkaError(
            ErrorCode.RESOURCE_NOT_FOUND,
            "Attempt to delete a user credential that does not exist",
        )
    credential = credential_from_salted_password(
        mechanism, bytes(change.salt), bytes(change.salted_password), int(change.iterations)
    )
    upsert_scram_credential(store, change.name, mechanism, credential)
    return None
