"""Rules of the chaos check that decide what it may expect: which removes promise that the
destination equals the source below their MIRROR_PID_RESET (only those that stopped a
copy, and below which offset), and which config grants must survive (only the last
alter of a topic), and where a grant counts as made on the writable side."""

from __future__ import annotations

import pytest

from mirrorsim.drills.chaos.invariants import (
    copied_below,
    source_holds_below,
    stopped_a_copy,
    watched_configs,
)
from mirrorsim.drills.chaos.journal import ChaosJournal, Grant, MirrorStart, RemoveRecord
from mirrorsim.drills.chaos.observe import UNANSWERED, LogRecords, batch_digests
from mirrorsim.protocol.records import RawBatch, Record, build_batch


@pytest.mark.parametrize(
    ("state_before", "promised"),
    [
        ("PREPARING", True),
        ("MIRRORING", True),
        ("PAUSED", True),
        ("OFFLINE", True),
        (UNANSWERED, True),
        ("STOPPED", False),
        (None, False),
    ],
)
def test_only_a_remove_that_stopped_a_copy_promises_convergence(
    state_before: str | None, promised: bool
) -> None:
    """Seed 3, schedule 32 of the soak: a re-add on ``b``, then ``b`` down, then a remove
    that reached the partition still STOPPED. The destination kept its own log with the
    first failover's MIRROR_PID_RESET, and the check compared it with the source's."""
    removal = RemoveRecord(1, "b", "t", 5, pid_reset_offset=6, state_before=state_before)
    assert stopped_a_copy(removal) is promised


def test_a_later_alter_the_explorer_could_not_count_replaces_an_earlier_grant() -> None:
    """Seed 4, schedule 7 of the soak: two alters of ``retention.ms`` on the source; the
    second was not counted as a grant (its topic's state could not be read then), and the
    check expected the first value although the second had replaced it."""
    entry = ChaosJournal()
    first = Grant(7, "a", "t", "retention.ms", "86400000")
    entry.configs.append(first)
    entry.config_alters += [first, Grant(8, "a", "t", "retention.ms", "7200000")]
    assert watched_configs(entry) == []


def test_the_last_grant_of_a_topic_is_watched() -> None:
    entry = ChaosJournal()
    grants = [Grant(3, "a", "t", "retention.ms", "1"), Grant(5, "a", "t", "retention.ms", "2")]
    entry.configs += grants
    entry.config_alters += [*grants, Grant(6, "b", "t", "retention.ms", "3")]
    assert watched_configs(entry) == [grants[1]]


def _log(pid_resets: tuple[tuple[int, int], ...]) -> LogRecords:
    return LogRecords(values={}, epochs={}, pid_resets=pid_resets, batches=(), log_end=7)


def test_a_remove_that_overtook_a_re_adds_cut_promises_only_what_was_copied_before() -> None:
    """Seed 5, schedule 59 of the soak: fail over (MIRROR_PID_RESET at 5), re-add, and a
    remove while the partition was PREPARING, its source's state coordinator down: the
    remove cut nothing, so ``b`` still held its own reset at 5 below the second at 6, and
    the check compared it with the source's log, which has no batch there."""
    assert copied_below(_log(((5, 1), (6, 3))), own_from=5, limit=6) == 5


@pytest.mark.parametrize(
    ("resets", "own_from", "limit", "expected"),
    [
        (((6, 3),), 5, 6, 6),
        (((5, 1), (6, 3)), None, 6, 6),
        (((5, 1), (6, 3)), 6, 6, 6),
    ],
)
def test_a_destination_whose_earlier_reset_was_cut_is_compared_up_to_the_limit(
    resets: tuple[tuple[int, int], ...], own_from: int | None, limit: int, expected: int
) -> None:
    """The earlier reset cut away (the LME cut reached the log), no earlier failover, or
    a reset at the limit itself: the whole range below the limit must be a copy."""
    assert copied_below(_log(resets), own_from, limit) == expected


def _own_batches(*values: bytes) -> tuple[RawBatch, ...]:
    return tuple(
        build_batch([Record(offset, 0, None, value)], base_offset=offset)
        for offset, value in enumerate(values)
    )


def _log_of(batches: tuple[RawBatch, ...]) -> LogRecords:
    return LogRecords({}, {}, (), batches, batches[-1].last_offset + 1 if batches else 0)


def test_a_failback_removed_before_its_cut_owes_the_source_nothing() -> None:
    """Seed 5, schedule 636 of the soak: a failback on ``a`` (the old source, never failed
    over) removed while PREPARING. ``a`` kept its own log, which the source never had;
    no earlier MIRROR_PID_RESET says so, but the log, unchanged since the add, does."""
    own = _own_batches(b"a-0", b"a-1", b"a-2")
    at_add = batch_digests(_log_of(own))
    assert copied_below(_log_of(own), None, 3, at_add) == 0


def test_a_failback_whose_log_changed_after_the_add_is_compared_up_to_the_limit() -> None:
    """A cut (or a copy) changed the log after the add: all of it below the limit must
    be the source's."""
    at_add = batch_digests(_log_of(_own_batches(b"a-0", b"a-1", b"a-2")))
    copied = _own_batches(b"a-0", b"b-1", b"b-2")
    assert copied_below(_log_of(copied), None, 3, at_add) == 3
    assert copied_below(_log_of(copied[:1]), None, 3, at_add) == 3
    assert copied_below(_log_of(copied), None, 3, None) == 3


def test_a_source_cut_by_a_later_failback_is_compared_only_as_far_as_it_copied_back() -> None:
    """Seed 5, schedule 146 of the soak: a→b, fail over on ``b``, fail back on ``a``
    (its LME cut emptied ``a``'s log), ``b`` down, the failback paused. The copy on ``b``
    was checked against ``a``'s log, which no longer held it: "differs from a below 5:
    first differing batch at 0"."""
    refilled = _log_of(_own_batches(b"a-0", b"a-1"))
    assert source_holds_below(refilled, 5, source_mirrored_since=True) == 2
    assert source_holds_below(_log_of(()), 5, source_mirrored_since=True) == 0
    assert source_holds_below(refilled, 5, source_mirrored_since=False) == 5


def test_a_topic_added_and_not_removed_since_is_still_mirrored() -> None:
    """Seed 26, schedule 56: the remove on ``b`` was refused (its partition had no
    leader), ``b``'s broker came back and did not serve the partition yet, so
    DescribeMirrors reported no mirror for it; a grant made then is not on the writable
    side, and the sync rightly took it away."""
    entry = ChaosJournal()
    assert not entry.still_mirrored("b", "t")
    entry.starts.append(MirrorStart(1, "b", "m", "a", "t"))
    assert entry.still_mirrored("b", "t")
    assert not entry.still_mirrored("a", "t")
    entry.removes.append(RemoveRecord(3, "b", "t", 5))
    assert not entry.still_mirrored("b", "t")
    entry.starts.append(MirrorStart(4, "b", "m", "a", "t", confirmed=False))
    assert entry.still_mirrored("b", "t")
