"""mirror.acl.include rules (every example of the spec) and the ACL diff."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.coordinator.sync import (
    AclRuleError,
    AclScope,
    CreateAcls,
    DeleteAcls,
    MirrorTopic,
    MirrorTopicStatus,
    SyncFilterError,
    diff_acls,
    parse_acl_include,
    parse_acl_rule,
)
from mirrorsim.protocol.acl import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

R = ResourceType
OP = AclOperation
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


def acl(
    resource_type: ResourceType = R.TOPIC,
    name: str = "orders",
    principal: str = "User:alice",
    operation: AclOperation = OP.READ,
    permission: AclPermissionType = ALLOW,
    pattern: PatternType = PatternType.LITERAL,
    host: str = "*",
) -> AclBinding:
    return AclBinding(resource_type, name, pattern, principal, host, operation, permission)


ORDERS_READ_ALICE = acl()
ORDERS_EU_WRITE_BOB = acl(name="orders.eu", principal="User:bob", operation=OP.WRITE)
PAYMENTS_READ_BOB = acl(name="payments", principal="User:bob")
PAYMENTS_WRITE_ALICE = acl(name="payments", operation=OP.WRITE)
PAYMENTS_READ_DENY_CAROL = acl(name="payments", principal="User:carol", permission=DENY)
GROUP_CONSUMER_READ_BOB = acl(R.GROUP, "consumer-1", "User:bob")
GROUP_CONSUMER_READ_ALICE = acl(R.GROUP, "consumer-1", "User:alice")
GROUP_OTHER_READ_BOB = acl(R.GROUP, "batch", "User:bob")
CLUSTER_ALTER_APP = acl(R.CLUSTER, "kafka-cluster", "User:app-1", OP.ALTER)
CLUSTER_DESCRIBE_MYAPP = acl(R.CLUSTER, "kafka-cluster", "User:my-app-1", OP.DESCRIBE)
PREFIXED_ORDERS_DESCRIBE_APP = acl(
    name="orders", principal="User:app-orders", operation=OP.DESCRIBE, pattern=PatternType.PREFIXED
)
ALL = [
    ORDERS_READ_ALICE,
    ORDERS_EU_WRITE_BOB,
    PAYMENTS_READ_BOB,
    PAYMENTS_WRITE_ALICE,
    PAYMENTS_READ_DENY_CAROL,
    GROUP_CONSUMER_READ_BOB,
    GROUP_CONSUMER_READ_ALICE,
    GROUP_OTHER_READ_BOB,
    CLUSTER_ALTER_APP,
    CLUSTER_DESCRIBE_MYAPP,
    PREFIXED_ORDERS_DESCRIBE_APP,
]


TOPICS = ("orders", "orders.eu", "payments", "consumer-1")
PURE_COPY = AclScope.of([MirrorTopic(name) for name in TOPICS], TOPICS)
"""Every destination topic MIRRORING in the mirror: the rules alone decide."""


def covered(value: str) -> set[AclBinding]:
    rules = parse_acl_include(value)
    return {binding for binding in ALL if rules.covers(binding)}


def test_star_covers_all_acls() -> None:
    assert covered("*") == set(ALL)


def test_topic_name_regex() -> None:
    assert covered("TOPIC;orders.*") == {
        ORDERS_READ_ALICE,
        ORDERS_EU_WRITE_BOB,
        PREFIXED_ORDERS_DESCRIBE_APP,
    }


def test_principal_only() -> None:
    assert covered("*;*;*;*;User:alice") == {
        ORDERS_READ_ALICE,
        PAYMENTS_WRITE_ALICE,
        GROUP_CONSUMER_READ_ALICE,
    }


def test_principal_regex_matches_the_whole_principal() -> None:
    assert covered("*;*;*;*;User:app-.*") == {CLUSTER_ALTER_APP, PREFIXED_ORDERS_DESCRIBE_APP}


def test_topic_read_allow() -> None:
    assert covered("TOPIC;*;READ;ALLOW") == {ORDERS_READ_ALICE, PAYMENTS_READ_BOB}


def test_group_rule_with_every_field() -> None:
    assert covered("GROUP;consumer-.*;READ;ALLOW;User:bob") == {GROUP_CONSUMER_READ_BOB}


def test_comma_separates_two_rules() -> None:
    rules = parse_acl_include("TOPIC;orders.*,*;*;*;*;User:alice")
    assert [rule.text for rule in rules.rules] == ["TOPIC;orders.*", "*;*;*;*;User:alice"]
    assert covered("TOPIC;orders.*,*;*;*;*;User:alice") == {
        ORDERS_READ_ALICE,
        ORDERS_EU_WRITE_BOB,
        PREFIXED_ORDERS_DESCRIBE_APP,
        PAYMENTS_WRITE_ALICE,
        GROUP_CONSUMER_READ_ALICE,
    }


def test_trailing_wildcards_may_be_omitted() -> None:
    assert covered("TOPIC") == covered("TOPIC;*;*;*;*")
    assert covered("TOPIC;*;READ") == covered("TOPIC;*;READ;*;*")


def test_names_are_case_insensitive_and_accept_kafka_acls_spelling() -> None:
    rule = parse_acl_rule("transactionalId;*;DescribeConfigs;allow")
    assert rule.resource_type is R.TRANSACTIONAL_ID
    assert rule.operation is OP.DESCRIBE_CONFIGS
    assert rule.permission_type is ALLOW
    assert parse_acl_rule("cluster_mirror").resource_type is R.CLUSTER_MIRROR


def test_empty_include_covers_nothing() -> None:
    assert covered("") == set()


def test_cluster_mirror_acls_need_a_rule_that_names_them() -> None:
    mirror_admin = acl(R.CLUSTER_MIRROR, "my-mirror", "User:mirror-admin", OP.ALTER)
    assert not parse_acl_include("*").covers(mirror_admin)
    assert not parse_acl_include("*;my-mirror").covers(mirror_admin)
    assert parse_acl_include("CLUSTER_MIRROR").covers(mirror_admin)
    assert parse_acl_include("CLUSTER_MIRROR;my-.*;ALTER;ALLOW;User:mirror-admin").covers(
        mirror_admin
    )


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("TOPICS;x", "unknown resource type 'TOPICS'"),
        ("ANY", "unknown resource type 'ANY'"),
        ("TOPIC;x;READS", "unknown operation 'READS'"),
        ("TOPIC;x;READ;MAYBE", "unknown permission type 'MAYBE'"),
        ("TOPIC;x;READ;ANY", "unknown permission type 'ANY'"),
        ("TOPIC;x;READ;ALLOW;User:a;extra", "has 6 fields, at most 5"),
        ("TOPIC;;READ", "field resourceName is empty"),
        ("TOPIC;x;", "field operation is empty"),
        ("TOPIC;orders(", "resourceName 'orders(' is not a valid regex"),
        ("*;*;*;*;User:[a", "principal 'User:[a' is not a valid regex"),
    ],
)
def test_bad_rules_are_refused_with_a_clear_error(value: str, problem: str) -> None:
    with pytest.raises(AclRuleError) as error:
        parse_acl_include(f"*,{value}")
    assert isinstance(error.value, SyncFilterError)
    assert str(error.value).startswith(f"mirror.acl.include: rule {value!r}")
    assert problem in str(error.value)


def test_unknown_name_error_lists_the_choices() -> None:
    with pytest.raises(AclRuleError, match="expected \\* or one of TOPIC, GROUP, CLUSTER"):
        parse_acl_rule("TOPICS")


def test_missing_acls_are_created_and_extra_ones_deleted() -> None:
    stale = acl(name="orders", principal="User:mallory")
    operations = diff_acls(
        [ORDERS_READ_ALICE, PAYMENTS_READ_BOB],
        [PAYMENTS_READ_BOB, stale],
        parse_acl_include("*"),
        PURE_COPY,
    )
    assert operations == (CreateAcls((ORDERS_READ_ALICE,)), DeleteAcls((stale,)))


def test_equal_acls_produce_nothing() -> None:
    assert diff_acls(ALL, list(reversed(ALL)), parse_acl_include("*"), PURE_COPY) == ()


def test_destination_acls_outside_the_rules_are_left_alone() -> None:
    local = acl(R.CLUSTER_MIRROR, "my-mirror", "User:mirror-admin", OP.ALTER)
    operations = diff_acls(
        [ORDERS_READ_ALICE],
        [PAYMENTS_READ_BOB, local],
        parse_acl_include("TOPIC;orders.*"),
        PURE_COPY,
    )
    assert operations == (CreateAcls((ORDERS_READ_ALICE,)),)


def test_source_acls_outside_the_rules_are_not_copied() -> None:
    assert diff_acls([PAYMENTS_READ_BOB], [], parse_acl_include("TOPIC;orders.*"), PURE_COPY) == ()


def test_host_and_pattern_type_are_part_of_the_identity() -> None:
    from_host = acl(host="10.0.0.1")
    prefixed = acl(pattern=PatternType.PREFIXED)
    operations = diff_acls(
        [from_host, prefixed], [ORDERS_READ_ALICE], parse_acl_include("*"), PURE_COPY
    )
    assert operations == (CreateAcls((from_host, prefixed)), DeleteAcls((ORDERS_READ_ALICE,)))


# Convergence: applying the creates and deletes leaves nothing to do.

BINDINGS = st.builds(
    acl,
    st.sampled_from([R.TOPIC, R.GROUP, R.CLUSTER_MIRROR]),
    st.sampled_from(["orders", "orders.eu", "payments", "consumer-1"]),
    st.sampled_from(["User:alice", "User:bob", "User:app-1"]),
    st.sampled_from([OP.READ, OP.WRITE, OP.DESCRIBE]),
    st.sampled_from([ALLOW, DENY]),
)
RULES = st.sampled_from(
    [
        "*",
        "TOPIC;orders.*",
        "*;*;*;*;User:alice",
        "*;*;*;*;User:app-.*",
        "TOPIC;*;READ;ALLOW",
        "GROUP;consumer-.*;READ;ALLOW;User:bob",
        "TOPIC;orders.*,*;*;*;*;User:alice",
        "CLUSTER_MIRROR,TOPIC;payments",
    ]
)


@given(st.sets(BINDINGS), st.sets(BINDINGS), RULES)
def test_applying_an_acl_diff_converges(
    source: set[AclBinding], destination: set[AclBinding], value: str
) -> None:
    rules = parse_acl_include(value)
    after = set(destination)
    for operation in diff_acls(source, destination, rules, PURE_COPY):
        match operation:
            case CreateAcls(bindings):
                assert after.isdisjoint(bindings)
                after |= set(bindings)
            case DeleteAcls(bindings):
                assert set(bindings) <= after
                after -= set(bindings)
    assert diff_acls(source, after, rules, PURE_COPY) == ()
    assert {b for b in after if rules.covers(b)} == {b for b in source if rules.covers(b)}
    assert {b for b in after if not rules.covers(b)} == {
        b for b in destination if not rules.covers(b)
    }


# Scope: only the resources of the mirror's MIRRORING topics.

MIRRORING, PAUSED, STOPPED = (
    MirrorTopicStatus.MIRRORING,
    MirrorTopicStatus.PAUSED,
    MirrorTopicStatus.STOPPED,
)
NEW_PRODUCER_WRITES_ORDERS = acl(name="orders", principal="User:new-producer", operation=OP.WRITE)


def scope(statuses: dict[str, MirrorTopicStatus], *local: str) -> AclScope:
    topics = [MirrorTopic(name, status) for name, status in statuses.items()]
    return AclScope.of(topics, [*statuses, *local, "__consumer_offsets", "__mirror_state"])


@pytest.mark.parametrize("status", [PAUSED, STOPPED])
def test_a_grant_on_a_paused_or_stopped_topic_is_the_destinations(
    status: MirrorTopicStatus,
) -> None:
    after_failover = scope({"orders": status, "payments": MIRRORING})
    operations = diff_acls(
        [PAYMENTS_READ_BOB],
        [PAYMENTS_READ_BOB, NEW_PRODUCER_WRITES_ORDERS],
        parse_acl_include("*"),
        after_failover,
    )
    assert operations == ()
    assert diff_acls([ORDERS_READ_ALICE], [], parse_acl_include("*"), after_failover) == ()


def test_topics_outside_the_mirror_keep_their_acls() -> None:
    operations = diff_acls(
        [ORDERS_READ_ALICE, PAYMENTS_READ_BOB],
        [PAYMENTS_WRITE_ALICE],
        parse_acl_include("*"),
        scope({"orders": MIRRORING}, "payments"),
    )
    assert operations == (CreateAcls((ORDERS_READ_ALICE,)),)


def test_a_prefix_is_synced_only_while_every_topic_it_covers_is_mirroring() -> None:
    prefixed = PREFIXED_ORDERS_DESCRIBE_APP
    both = scope({"orders": MIRRORING, "orders.eu": MIRRORING}, "payments")
    one_stopped = scope({"orders": MIRRORING, "orders.eu": STOPPED})
    none_covered = scope({"payments": MIRRORING})
    assert both.covers(prefixed)
    assert not one_stopped.covers(prefixed)
    assert not none_covered.covers(prefixed)
    wildcard = acl(name="*")
    assert scope({"orders": MIRRORING, "payments": MIRRORING}).covers(wildcard)
    assert not both.covers(wildcard)


def test_cluster_wide_acls_follow_only_a_pure_copy() -> None:
    pure = scope({"orders": MIRRORING, "payments": MIRRORING})
    for binding in (GROUP_CONSUMER_READ_BOB, CLUSTER_ALTER_APP):
        assert pure.covers(binding)
        assert not scope({"orders": MIRRORING, "payments": STOPPED}).covers(binding)
        assert not scope({"orders": MIRRORING, "payments": PAUSED}).covers(binding)
        assert not scope({"orders": MIRRORING}, "local").covers(binding)
        assert not scope({"orders": PAUSED}).covers(binding)


def test_opposite_mirrors_of_a_failback_never_share_a_binding() -> None:
    """A→B with orders STOPPED on B (failed over), B→A with orders MIRRORING on A; each
    cluster also holds the other's topics. No binding is owned by both mirrors."""
    on_b = scope({"orders": STOPPED, "payments": MIRRORING})
    on_a = scope({"orders": MIRRORING}, "payments")
    for binding in [*ALL, NEW_PRODUCER_WRITES_ORDERS]:
        assert not (on_b.covers(binding) and on_a.covers(binding)), binding


STATUSES = st.sampled_from([MIRRORING, PAUSED, STOPPED])


@given(
    st.sets(BINDINGS),
    st.sets(BINDINGS),
    RULES,
    st.fixed_dictionaries({name: STATUSES for name in TOPICS[:3]}),
)
def test_bindings_outside_the_scope_are_never_created_or_deleted(
    source: set[AclBinding],
    destination: set[AclBinding],
    value: str,
    statuses: dict[str, MirrorTopicStatus],
) -> None:
    owned = scope(statuses)
    for operation in diff_acls(source, destination, parse_acl_include(value), owned):
        assert all(owned.covers(b) for b in operation.bindings)
        for binding in operation.bindings:
            if binding.resource_type == R.TOPIC and binding.pattern_type == PatternType.LITERAL:
                assert statuses.get(binding.resource_name) is MIRRORING


IN_MIRROR = st.one_of(st.none(), STATUSES)
SIDES = st.tuples(IN_MIRROR, IN_MIRROR).filter(lambda pair: pair != (MIRRORING, MIRRORING))
"""A topic's status in the A→B mirror (on B) and in the B→A mirror (on A), or None
where it is not in that mirror; it is never MIRRORING both ways (read-only on both)."""
ANY_TOPIC_BINDINGS = st.builds(
    acl,
    name=st.sampled_from(["*", "orders", "pay"]),
    pattern=st.sampled_from([PatternType.LITERAL, PatternType.PREFIXED]),
)


@given(
    st.fixed_dictionaries({name: SIDES for name in TOPICS}),
    st.sets(BINDINGS | ANY_TOPIC_BINDINGS),
)
def test_mirrors_of_opposite_directions_never_own_the_same_binding(
    sides: dict[str, tuple[MirrorTopicStatus | None, MirrorTopicStatus | None]],
    bindings: set[AclBinding],
) -> None:
    """Both clusters hold every topic (a mirror's topics exist on its source), as during
    a failback: orders STOPPED in A→B on B and MIRRORING in B→A on A, and any mix."""
    on_b = AclScope.of([MirrorTopic(t, b) for t, (b, _) in sides.items() if b is not None], TOPICS)
    on_a = AclScope.of([MirrorTopic(t, a) for t, (_, a) in sides.items() if a is not None], TOPICS)
    for binding in bindings:
        assert not (on_b.covers(binding) and on_a.covers(binding)), binding
