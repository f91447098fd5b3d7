"""The handlers' entry point to authorization: ``await authorize(ctx, op, type, name)``.

With ``authorizer.class.name`` empty (the default) every request is allowed, exactly as
a Kafka broker without an authorizer. Otherwise the ACLs come from the metadata store,
cached per broker and re-read after ``metadata.refresh.interval.ms`` (other brokers of
the cluster may have changed them) or at once after this broker changed them.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from mirrorsim.broker.auth.authorizer import AclAuthorizer, parse_super_users
from mirrorsim.broker.metadata.store import MetadataStore
from mirrorsim.protocol.acl import CLUSTER_RESOURCE_NAME, AclOperation, ResourceType
from mirrorsim.protocol.errors import ErrorCode, KafkaError

DENIAL_CODES: dict[ResourceType, ErrorCode] = {
    ResourceType.TOPIC: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    ResourceType.GROUP: ErrorCode.GROUP_AUTHORIZATION_FAILED,
    ResourceType.CLUSTER: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    ResourceType.TRANSACTIONAL_ID: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ResourceType.CLUSTER_MIRROR: ErrorCode.MIRROR_AUTHORIZATION_FAILED,
}


SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.CREATE,
        AclOperation.DELETE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    ),
    ResourceType.CLUSTER: (
        AclOperation.CREATE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
        AclOperation.CLUSTER_ACTION,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
        AclOperation.IDEMPOTENT_WRITE,
    ),
    ResourceType.GROUP: (
        AclOperation.READ,
        AclOperation.DESCRIBE,
        AclOperation.DELETE,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    ),
}
"""The operations Kafka's ``AclEntry.supportedOperations`` lists per resource type: what
IncludeAuthorizedOperations answers about (Metadata, DescribeCluster, the group describe
APIs)."""


@dataclass(slots=True)
class _CachedAcls:
    authorizer: AclAuthorizer
    loaded_at: float


CLUSTER = CLUSTER_RESOURCE_NAME


@runtime_checkable
class AclHost(Protocol):
    """What authorization reads of its broker: the stored ACLs and the authorizer configs."""

    @property
    def store(self) -> MetadataStore: ...

    def config(self, name: str) -> Any: ...


_cache: weakref.WeakKeyDictionary[AclHost, _CachedAcls] = weakref.WeakKeyDictionary()
_locks: weakref.WeakKeyDictionary[AclHost, asyncio.Lock] = weakref.WeakKeyDictionary()


def authorizer_enabled(broker: AclHost) -> bool:
    return bool(broker.config("authorizer.class.name"))


def invalidate_acls(broker: AclHost) -> None:
    """Called after this broker changed the ACLs so the next check sees the change."""
    _cache.pop(broker, None)


async def current_authorizer(broker: AclHost) -> AclAuthorizer:
    max_age_s = int(broker.config("metadata.refresh.interval.ms")) / 1000
    cached = _cache.get(broker)
    if cached is not None and time.monotonic() - cached.loaded_at < max_age_s:
        return cached.authorizer
    lock = _locks.setdefault(broker, asyncio.Lock())
    async with lock:
        cached = _cache.get(broker)
        if cached is not None and time.monotonic() - cached.loaded_at < max_age_s:
            return cached.authorizer
        bindings = await asyncio.to_thread(broker.store.acls)
        authorizer = AclAuthorizer.of(
            bindings,
            parse_super_users(broker.config("super.users")),
            bool(broker.config("allow.everyone.if.no.acl.found")),
        )
        _cache[broker] = _CachedAcls(authorizer, time.monotonic())
        return authorizer


async def is_authorized(
    ctx: Any, operation: AclOperation, resource_type: ResourceType, name: str
) -> bool:
    """Whether the request's principal may do ``operation`` on the resource."""
    if not authorizer_enabled(ctx.broker):
        return True
    authorizer = await current_authorizer(ctx.broker)
    return authorizer.authorize(ctx.principal, ctx.client_host, operation, resource_type, name)


async def authorize(
    ctx: Any,
    operation: AclOperation,
    resource_type: ResourceType,
    name: str = CLUSTER_RESOURCE_NAME,
    *,
    error: ErrorCode | None = None,
) -> None:
    """Raise KafkaError with Kafka's code for the resource type (or ``error``) if denied.

    Handlers already turn a KafkaError raised for one entity into that entity's error
    code, so a check is one line inside that entity's ``try``.
    """
    if not await is_authorized(ctx, operation, resource_type, name):
        code = error if error is not None else DENIAL_CODES[resource_type]
        raise KafkaError(code, _denial_message(operation, resource_type, name))


async def authorize_all(
    ctx: Any,
    operation: AclOperation,
    resource_type: ResourceType,
    names: list[str],
    *,
    error: ErrorCode | None = None,
) -> None:
    for name in names:
        await authorize(ctx, operation, resource_type, name, error=error)


async def authorized_names(
    ctx: Any, operation: AclOperation, resource_type: ResourceType, names: list[str]
) -> set[str]:
    """The subset of ``names`` the principal may act on (Metadata and list filtering)."""
    return {n for n in names if await is_authorized(ctx, operation, resource_type, n)}


def _denial_message(operation: AclOperation, resource_type: ResourceType, name: str) -> str:
    return f"Principal is not authorized to {operation.name} {resource_type.name} {name}"


async def denial(
    ctx: Any, operation: AclOperation, resource_type: ResourceType, name: str
) -> KafkaError | None:
    """The KafkaError a denied request gets, or None when allowed (for code that builds
    an error entry instead of catching)."""
    try:
        await authorize(ctx, operation, resource_type, name)
    except KafkaError as exc:
        return exc
    return None


async def authorize_topic_creation(ctx: Any, topic: str) -> None:
    """Kafka allows CreateTopics with CREATE on the cluster or CREATE on the topic."""
    if not await is_authorized(
        ctx, AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME
    ):
        await authorize(ctx, AclOperation.CREATE, ResourceType.TOPIC, topic)


async def fetch_denials(ctx: Any, keys: list[Any], *, follower: bool) -> dict[Any, KafkaError]:
    """Fetch's per-partition refusals: a follower needs CLUSTER_ACTION on the cluster
    (Kafka's replica fetch check), a consumer READ on each topic (keys carry ``.topic``)."""
    if not authorizer_enabled(ctx.broker):
        return {}
    if follower:
        error = await denial(
            ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME
        )
        return {} if error is None else dict.fromkeys(keys, error)
    refused: dict[Any, KafkaError] = {}
    for key in keys:
        error = await denial(ctx, AclOperation.READ, ResourceType.TOPIC, key.topic)
        if error is not None:
            refused[key] = error
    return refused


async def authorized_operations(ctx: Any, resource_type: ResourceType, name: str) -> int:
    """Kafka's authorized-operations bit field: bit ``op`` set for every supported
    operation the principal may do on the resource (all of them without an authorizer)."""
    bits = 0
    for operation in SUPPORTED_OPERATIONS[resource_type]:
        if await is_authorized(ctx, operation, resource_type, name):
            bits |= 1 << int(operation)
    return bits
