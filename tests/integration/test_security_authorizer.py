"""ACL enforcement end to end: produce, consume, admin and the mirror RPCs, with SASL
principals from the project's client."""

from __future__ import annotations

from typing import Any

import pytest

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import (
    AclBinding,
    AclOperation,
    NewTopic,
    ResourceType,
)
from mirrorsim.protocol.errors import ErrorCode, KafkaError

SECURED = {
    "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
    "sasl.users": "admin:admin-secret,alice:alice-secret,mirror-admin:m,monitor:m",
    "authorizer.class.name": "mirrorsim.AclAuthorizer",
    "super.users": "User:admin;User:ANONYMOUS",
    "metadata.refresh.interval.ms": 100,
}
FAST = {"retry.backoff.ms": "10", "retry.backoff.max.ms": "50", "default.api.timeout.ms": "3000"}


def client_config(user: str, password: str) -> dict[str, str]:
    return {
        **FAST,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": password,
    }


@pytest.fixture
async def bootstrap(start_cluster: Any) -> str:
    cluster = await start_cluster("primary", brokers=1, configs=SECURED)
    return f"127.0.0.1:{cluster.brokers[0].server.endpoints()['SASL_PLAINTEXT'][1]}"


def allow(principal: str, rtype: ResourceType, name: str, op: AclOperation) -> AclBinding:
    return AclBinding(rtype, name, principal, op)


async def test_topic_admin_is_denied_then_allowed_by_an_acl(bootstrap: str) -> None:
    async with Admin(bootstrap=bootstrap, config=client_config("alice", "alice-secret")) as alice:
        denied = await alice.create_topics([NewTopic("orders", 1, 1)])
        assert denied["orders"] is not None
        assert denied["orders"].code is ErrorCode.TOPIC_AUTHORIZATION_FAILED
        with pytest.raises(KafkaError) as raised:
            grant = allow("User:alice", ResourceType.TOPIC, "x", AclOperation.READ)
            (await alice.create_acls([grant])).all()
        assert raised.value.code is ErrorCode.CLUSTER_AUTHORIZATION_FAILED

        async with Admin(
            bootstrap=bootstrap, config=client_config("admin", "admin-secret")
        ) as root:
            grant = allow("User:alice", ResourceType.TOPIC, "orders", AclOperation.CREATE)
            (await root.create_acls([grant])).all()
            (await root.create_topics([NewTopic("hidden", 1, 1)])).all()

        (await alice.create_topics([NewTopic("orders", 1, 1)])).all()
        # CREATE does not imply DESCRIBE: the listing hides both topics from alice
        assert "hidden" not in await alice.list_topics()


async def test_mirror_rpcs_follow_the_cluster_mirror_acls(bootstrap: str) -> None:
    admin_ops = [AclOperation.CREATE, AclOperation.ALTER, AclOperation.DESCRIBE]
    async with Admin(bootstrap=bootstrap, config=client_config("admin", "admin-secret")) as root:
        (
            await root.create_acls(
                [
                    allow("User:mirror-admin", ResourceType.CLUSTER_MIRROR, "my-mirror", op)
                    for op in admin_ops
                ]
                + [allow("User:monitor", ResourceType.CLUSTER_MIRROR, "*", AclOperation.DESCRIBE)]
            )
        ).all()
    async with Admin(bootstrap=bootstrap, config=client_config("monitor", "m")) as monitor:
        with pytest.raises(KafkaError) as raised:
            await monitor.create_mirror("my-mirror", {"bootstrap.servers": "127.0.0.1:1"})
        assert raised.value.code is ErrorCode.MIRROR_AUTHORIZATION_FAILED
    async with Admin(bootstrap=bootstrap, config=client_config("mirror-admin", "m")) as madmin:
        with pytest.raises(KafkaError) as raised:
            await madmin.create_mirror("other-mirror", {"bootstrap.servers": "127.0.0.1:1"})
        assert raised.value.code is ErrorCode.MIRROR_AUTHORIZATION_FAILED
