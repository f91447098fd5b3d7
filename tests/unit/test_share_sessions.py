"""Share sessions: epochs shared by ShareFetch and ShareAcknowledge, replacement, the cache's
capacity and a session ending with the connection that opened it."""

from __future__ import annotations

import uuid

import pytest

from mirrorsim.broker.group.share_sessions import (
    SharePartitionKey,
    ShareSessionCache,
    ShareSessionError,
    next_epoch,
)
from mirrorsim.protocol.errors import ErrorCode

TOPIC = uuid.uuid4()
P0, P1 = SharePartitionKey(TOPIC, 0), SharePartitionKey(TOPIC, 1)


def test_requests_carry_consecutive_epochs_and_a_wrong_one_is_refused() -> None:
    cache = ShareSessionCache(capacity=10)
    session, replaced = cache.open("g", "m", [P0])
    assert replaced is None and session.next_epoch == 1
    assert cache.advance("g", "m", 1).next_epoch == 2
    with pytest.raises(ShareSessionError) as refused:
        cache.advance("g", "m", 1)
    assert refused.value.error == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    with pytest.raises(ShareSessionError) as missing:
        cache.advance("g", "other", 1)
    assert missing.value.error == ErrorCode.SHARE_SESSION_NOT_FOUND


def test_the_epoch_wraps_from_the_largest_int32_to_one() -> None:
    assert next_epoch(2**31 - 1) == 1
    assert next_epoch(41) == 42


def test_opening_again_replaces_the_members_session() -> None:
    cache = ShareSessionCache(capacity=10)
    first, _ = cache.open("g", "m", [P0])
    second, replaced = cache.open("g", "m", [P1])
    assert replaced is first and cache.get("g", "m") is second
    assert second.partitions == {P1}


def test_a_full_cache_refuses_a_new_session_and_keeps_a_replaced_one() -> None:
    cache = ShareSessionCache(capacity=1)
    kept, _ = cache.open("g", "a", [P0])
    with pytest.raises(ShareSessionError) as full:
        cache.open("g", "b", [P0])
    assert full.value.error == ErrorCode.SHARE_SESSION_LIMIT_REACHED
    assert cache.get("g", "a") is kept
    replacement, replaced = cache.open("g", "a", [P1])
    assert replaced is kept and cache.get("g", "a") is replacement


def test_a_session_ends_with_its_own_connection_only() -> None:
    cache = ShareSessionCache(capacity=10)
    old_connection, new_connection = object(), object()
    cache.open("g", "m", [P0], old_connection)
    cache.open("g", "m", [P0], new_connection)
    assert cache.disconnect("g", "m", old_connection) is None
    assert cache.disconnect("g", "m", new_connection) is not None
    assert cache.get("g", "m") is None
    with pytest.raises(ShareSessionError):
        cache.close("g", "m")
