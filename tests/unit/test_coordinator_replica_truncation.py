"""When a PREPARING leader may start mirroring: every required replica has taken the LME cut,
the ISR is at least ``min.insync.replicas`` (else skip and retry, never fail), and, with
unclean-election support, replicas that do not truncate within the timeout fail the
partition; without it the ISR shrink, not a timeout, deals with a follower that stalls."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.coordinator.replica_truncation import (
    FollowerFetch,
    ReplicaTruncationCheck,
    TruncationWait,
)

LEADER = 1
CUT_AT = 1_000
TIMEOUT = 500
LEADER_END = 40


def check(
    *,
    isr: tuple[int, ...] = (1, 2, 3),
    replicas: tuple[int, ...] = (1, 2, 3),
    min_isr: int = 1,
    all_replicas: bool = False,
    waiting_since_ms: int | None = None,
) -> ReplicaTruncationCheck:
    return ReplicaTruncationCheck(
        leader=LEADER,
        replicas=replicas,
        isr=isr,
        min_insync_replicas=min_isr,
        all_replicas_required=all_replicas,
        leader_log_end_offset=LEADER_END,
        truncated_at_ms=CUT_AT,
        timeout_ms=TIMEOUT,
        waiting_since_ms=waiting_since_ms,
    )


def truncated(at_ms: int = CUT_AT + 10, end: int = LEADER_END) -> FollowerFetch:
    return FollowerFetch(log_end_offset=end, last_fetch_ms=at_ms)


def test_complete_once_every_isr_follower_fetched_at_or_below_the_cut_after_it() -> None:
    followers = {2: truncated(), 3: truncated(end=LEADER_END - 5)}
    assert check().outcome(followers, CUT_AT + 20) is TruncationWait.COMPLETE


def test_a_fetch_from_before_the_cut_does_not_count() -> None:
    followers = {2: truncated(), 3: truncated(at_ms=CUT_AT - 1)}
    assert check().pending(followers) == [3]
    assert check().outcome(followers, CUT_AT + 20) is TruncationWait.WAITING


def test_a_follower_still_beyond_the_leaders_end_has_not_truncated() -> None:
    followers = {2: truncated(), 3: truncated(end=LEADER_END + 1)}
    assert check().pending(followers) == [3]


def test_only_isr_members_are_required_without_unclean_support() -> None:
    followers = {2: truncated()}
    assert check(isr=(1, 2)).outcome(followers, CUT_AT + 20) is TruncationWait.COMPLETE


def test_unclean_support_requires_every_replica_back_in_the_isr() -> None:
    every = {2: truncated(), 3: truncated()}
    assert check(isr=(1, 2), all_replicas=True).pending(every) == [3]
    assert check(all_replicas=True).outcome(every, CUT_AT + 20) is TruncationWait.COMPLETE


def test_replicas_required_for_unclean_support_time_out() -> None:
    every = check(all_replicas=True)
    assert every.outcome({2: truncated()}, CUT_AT + TIMEOUT) is TruncationWait.WAITING
    assert every.outcome({2: truncated()}, CUT_AT + TIMEOUT + 1) is TruncationWait.TIMED_OUT


def test_an_isr_member_that_has_not_truncated_is_waited_for_however_long() -> None:
    """The leader's ISR shrink takes a follower that stopped fetching out of the ISR;
    failing the partition first made a stalled follower need an operator."""
    late = CUT_AT + 100 * TIMEOUT
    assert check().outcome({2: truncated()}, late) is TruncationWait.WAITING
    assert check(isr=(1, 2)).outcome({2: truncated()}, late) is TruncationWait.COMPLETE


def test_an_isr_below_min_insync_replicas_skips_and_never_times_out() -> None:
    """Spec: "If less than min ISR are available, we will skip and retry"; before, the
    wait ran into the timeout and the partition went FAILED."""
    below = check(isr=(1,), min_isr=2)
    followers = {2: truncated(), 3: truncated()}
    assert below.outcome(followers, CUT_AT + 10) is TruncationWait.BELOW_MIN_ISR
    assert below.outcome(followers, CUT_AT + 100 * TIMEOUT) is TruncationWait.BELOW_MIN_ISR


def test_the_timeout_restarts_when_the_isr_is_back() -> None:
    back_at = CUT_AT + 10 * TIMEOUT
    again = check(
        isr=(1, 2), replicas=(1, 2), min_isr=2, all_replicas=True, waiting_since_ms=back_at
    )
    followers = {2: truncated(at_ms=CUT_AT - 1)}
    assert again.outcome(followers, back_at + TIMEOUT) is TruncationWait.WAITING
    assert again.outcome(followers, back_at + TIMEOUT + 1) is TruncationWait.TIMED_OUT
    assert again.outcome({2: truncated(at_ms=back_at)}, back_at + 1) is TruncationWait.COMPLETE


replica_ids = st.lists(st.integers(2, 6), unique=True, max_size=4)


@given(
    followers_in_isr=replica_ids,
    fetches=st.dictionaries(
        st.integers(2, 6),
        st.builds(
            FollowerFetch,
            log_end_offset=st.integers(0, 2 * LEADER_END),
            last_fetch_ms=st.integers(0, 3 * CUT_AT),
        ),
    ),
    min_isr=st.integers(1, 4),
    all_replicas=st.booleans(),
    now=st.integers(CUT_AT, CUT_AT + 3 * TIMEOUT),
)
def test_outcome_rules(
    followers_in_isr: list[int],
    fetches: dict[int, FollowerFetch],
    min_isr: int,
    all_replicas: bool,
    now: int,
) -> None:
    isr = (LEADER, *followers_in_isr)
    subject = check(
        isr=isr, replicas=(1, 2, 3, 4, 5, 6), min_isr=min_isr, all_replicas=all_replicas
    )
    outcome = subject.outcome(fetches, now)
    required = [r for r in (subject.replicas if all_replicas else isr) if r != LEADER]
    done = [
        r
        for r in required
        if r in fetches
        and fetches[r].last_fetch_ms >= CUT_AT
        and fetches[r].log_end_offset <= LEADER_END
        and r in isr
    ]
    if len(isr) < min_isr:
        assert outcome is TruncationWait.BELOW_MIN_ISR
    elif done == required:
        assert outcome is TruncationWait.COMPLETE
    elif all_replicas and now - CUT_AT > TIMEOUT:
        assert outcome is TruncationWait.TIMED_OUT
    else:
        assert outcome is TruncationWait.WAITING
    assert subject.pending(fetches) == [r for r in required if r not in done]
