"""The ACL decision rules: super users, DENY precedence, implied operations, patterns."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.broker.auth.authorizer import AclAuthorizer, parse_super_users
from mirrorsim.protocol.acl import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
T, CM = ResourceType.TOPIC, ResourceType.CLUSTER_MIRROR


def acl(
    name: str,
    op: AclOperation,
    *,
    principal: str = "User:alice",
    permission: AclPermissionType = ALLOW,
    pattern: PatternType = PatternType.LITERAL,
    rtype: ResourceType = T,
    host: str = "*",
) -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, permission)


def allowed(authorizer: AclAuthorizer, op: AclOperation, name: str, **kw: object) -> bool:
    principal = str(kw.get("principal", "User:alice"))
    rtype = kw.get("rtype", T)
    assert isinstance(rtype, ResourceType)
    return authorizer.authorize(principal, str(kw.get("host", "10.0.0.1")), op, rtype, name)


def test_literal_allow_grants_only_that_topic() -> None:
    authorizer = AclAuthorizer.of([acl("orders", AclOperation.READ)])
    assert allowed(authorizer, AclOperation.READ, "orders")
    assert not allowed(authorizer, AclOperation.READ, "orders2")
    assert not allowed(authorizer, AclOperation.WRITE, "orders")
    assert not allowed(authorizer, AclOperation.READ, "orders", principal="User:bob")


def test_describe_is_implied_by_read_write_delete_alter() -> None:
    for op in (AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER):
        assert allowed(AclAuthorizer.of([acl("t", op)]), AclOperation.DESCRIBE, "t")
    assert not allowed(
        AclAuthorizer.of([acl("t", AclOperation.CREATE)]), AclOperation.DESCRIBE, "t"
    )


def test_describe_configs_is_implied_by_alter_configs_only() -> None:
    authorizer = AclAuthorizer.of([acl("t", AclOperation.ALTER_CONFIGS)])
    assert allowed(authorizer, AclOperation.DESCRIBE_CONFIGS, "t")
    assert not allowed(authorizer, AclOperation.DESCRIBE, "t")


def test_all_grants_everything_and_deny_wins() -> None:
    authorizer = AclAuthorizer.of(
        [acl("*", AclOperation.ALL), acl("secret", AclOperation.READ, permission=DENY)]
    )
    assert allowed(authorizer, AclOperation.WRITE, "anything")
    assert not allowed(authorizer, AclOperation.READ, "secret")
    assert allowed(authorizer, AclOperation.WRITE, "secret")


def test_prefixed_pattern_and_wildcard_principal_and_host() -> None:
    authorizer = AclAuthorizer.of(
        [
            acl("app-", AclOperation.WRITE, pattern=PatternType.PREFIXED, principal="User:*"),
            acl("pinned", AclOperation.READ, host="10.0.0.9"),
        ]
    )
    assert allowed(authorizer, AclOperation.WRITE, "app-orders", principal="User:bob")
    assert not allowed(authorizer, AclOperation.WRITE, "ap", principal="User:bob")
    assert not allowed(authorizer, AclOperation.READ, "pinned")
    assert allowed(authorizer, AclOperation.READ, "pinned", host="10.0.0.9")


def test_super_users_and_no_acl_found() -> None:
    supers = parse_super_users("User:admin; User:broker")
    assert supers == {"User:admin", "User:broker"}
    strict = AclAuthorizer.of([acl("orders", AclOperation.READ)], supers)
    assert allowed(strict, AclOperation.ALTER, "anything", principal="User:broker")
    assert not allowed(strict, AclOperation.READ, "unguarded")
    lenient = AclAuthorizer.of([acl("orders", AclOperation.READ)], supers, True)
    assert allowed(lenient, AclOperation.READ, "unguarded", principal="User:bob")
    assert not allowed(lenient, AclOperation.READ, "orders", principal="User:bob")


def test_cluster_mirror_examples_from_the_spec() -> None:
    admin_ops = [
        AclOperation.CREATE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
        AclOperation.DELETE,
        AclOperation.ALTER_CONFIGS,
        AclOperation.DESCRIBE_CONFIGS,
    ]
    authorizer = AclAuthorizer.of(
        [acl("my-mirror", op, principal="User:mirror-admin", rtype=CM) for op in admin_ops]
        + [
            acl("*", op, principal="User:monitor", rtype=CM)
            for op in (AclOperation.DESCRIBE, AclOperation.DESCRIBE_CONFIGS)
        ]
    )
    admin = {"principal": "User:mirror-admin", "rtype": CM}
    monitor = {"principal": "User:monitor", "rtype": CM}
    assert allowed(authorizer, AclOperation.CREATE, "my-mirror", **admin)
    assert not allowed(authorizer, AclOperation.CREATE, "other", **admin)
    assert allowed(authorizer, AclOperation.DESCRIBE, "any-mirror", **monitor)
    assert not allowed(authorizer, AclOperation.ALTER, "my-mirror", **monitor)


names = st.text(alphabet="abc-", min_size=1, max_size=6)


@given(names, names, st.sampled_from(list(AclOperation)[2:]))
def test_deny_all_beats_any_allow(topic: str, prefix: str, op: AclOperation) -> None:
    authorizer = AclAuthorizer.of(
        [
            acl(prefix, AclOperation.ALL, pattern=PatternType.PREFIXED),
            acl(topic, op),
            acl(topic, AclOperation.ALL, permission=DENY),
        ]
    )
    assert not allowed(authorizer, op, topic)


@given(names, st.sampled_from(list(AclOperation)[2:]))
def test_without_bindings_only_the_no_acl_rule_decides(topic: str, op: AclOperation) -> None:
    assert not allowed(AclAuthorizer.of([]), op, topic)
    assert allowed(AclAuthorizer.of([], allow_everyone_if_no_acl_found=True), op, topic)
