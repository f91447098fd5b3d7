"""Comma-separated regex lists of the sync filters, and the mirror's filter config."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.coordinator.sync import (
    MirrorSyncFilters,
    PatternList,
    SyncFilterError,
    split_list,
    topic_config_exclusion,
)
from mirrorsim.coordinator.sync.topics import DEFAULT_TOPIC_PROPERTIES_EXCLUDE


@pytest.mark.parametrize(
    ("value", "items"),
    [
        ("", []),
        (".*", [".*"]),
        ("app-.*,service-.*", ["app-.*", "service-.*"]),
        (" a , b ,, c ,", ["a", "b", "c"]),
        ("p{1,3},q", ["p{1,3}", "q"]),
        ("(a,b)|c,d", ["(a,b)|c", "d"]),
        ("[,]x,y", ["[,]x", "y"]),
        (r"a\,b,c", [r"a\,b", "c"]),
        ("TOPIC;orders.*,*;*;*;*;User:alice", ["TOPIC;orders.*", "*;*;*;*;User:alice"]),
    ],
)
def test_split_list(value: str, items: list[str]) -> None:
    assert split_list(value) == items


@given(st.lists(st.from_regex(r"[a-z.*-]{1,8}", fullmatch=True), max_size=6))
def test_split_list_inverts_join(items: list[str]) -> None:
    assert split_list(", ".join(items)) == items


def test_pattern_list_matches_whole_names_only() -> None:
    patterns = PatternList.parse("app-.*,service-.*", config="mirror.groups.include")
    assert patterns.matches("app-1")
    assert patterns.matches("service-")
    assert not patterns.matches("my-app-1")
    assert not patterns.matches("other")


def test_pattern_list_with_inline_flags_still_matches() -> None:
    patterns = PatternList.parse("(?i)app-.*,svc", config="mirror.groups.include")
    assert patterns.matches("APP-1")
    assert patterns.matches("svc")
    assert not patterns.matches("svc2")


def test_empty_pattern_list_matches_nothing() -> None:
    assert not PatternList.parse("", config="mirror.groups.include").matches("anything")


def test_invalid_regex_names_the_config() -> None:
    with pytest.raises(SyncFilterError, match=r"mirror.groups.include: invalid regex 'app-\('"):
        PatternList.parse("ok,app-(", config="mirror.groups.include")


def test_default_exclude_list() -> None:
    exclude = topic_config_exclusion()
    for name in split_list(DEFAULT_TOPIC_PROPERTIES_EXCLUDE):
        assert exclude.matches(name)
    assert not exclude.matches("retention.ms")
    assert not exclude.matches("cleanup.policy")


def test_exclude_throttled_example() -> None:
    exclude = topic_config_exclusion(".*throttled.*")
    assert exclude.matches("follower.replication.throttled.replicas")
    assert exclude.matches("leader.replication.throttled.replicas")
    assert not exclude.matches("min.insync.replicas")
    assert not exclude.matches("retention.ms")


def test_exclude_two_properties_example() -> None:
    exclude = topic_config_exclusion("min.insync.replicas,unclean.leader.election.enable")
    assert exclude.matches("min.insync.replicas")
    assert exclude.matches("unclean.leader.election.enable")
    assert not exclude.matches("follower.replication.throttled.replicas")
    assert not exclude.matches("message.timestamp.type")


@pytest.mark.parametrize("value", ["", ".*throttled.*", "retention.ms"])
def test_mirror_configs_are_always_excluded(value: str) -> None:
    exclude = topic_config_exclusion(value)
    assert exclude.matches("mirror.name")
    assert exclude.matches("mirror.replication.throttled.replicas")


def test_filters_default_from_an_empty_mirror_config() -> None:
    filters = MirrorSyncFilters.from_mirror_config({})
    assert filters.topic_config_exclude.matches("min.insync.replicas")
    assert filters.groups_include.matches("any-group")
    assert [rule.text for rule in filters.acl_include.rules] == ["*"]


def test_filters_from_mirror_config() -> None:
    filters = MirrorSyncFilters.from_mirror_config(
        {
            "mirror.topic.properties.exclude": ".*throttled.*",
            "mirror.groups.include": "app-.*",
            "mirror.acl.include": "TOPIC;orders.*",
        }
    )
    assert not filters.topic_config_exclude.matches("min.insync.replicas")
    assert filters.topic_config_exclude.matches("mirror.name")
    assert filters.groups_include.matches("app-1")
    assert not filters.groups_include.matches("billing")
    assert [rule.text for rule in filters.acl_include.rules] == ["TOPIC;orders.*"]


def test_filters_reject_a_bad_rule() -> None:
    with pytest.raises(SyncFilterError, match=r"mirror\.acl\.include"):
        MirrorSyncFilters.from_mirror_config({"mirror.acl.include": "TOPICS;x"})
