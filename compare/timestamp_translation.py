"""Timestamp-based group offset translation (MM2's alternative to offset syncs).

The record at the group's committed upstream offset has a timestamp; the target's
ListOffsets for that timestamp returns the earliest target offset whose timestamp is at
or after it. Records sharing one timestamp are therefore re-read rather than skipped,
and the error stays bounded by how many records share a timestamp, however far the
consumer lags. Two guards come from the same design: no translation while the record is
not replicated yet, and never a commit that would move the target group backwards.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence


def offset_for_timestamp(log: Sequence[tuple[int, int]], timestamp: int) -> int | None:
    """ListOffsets semantics over ``(offset, timestamp)`` pairs with non-decreasing timestamps:
    the earliest offset whose timestamp is at or after ``timestamp``, None past the end."""
    index = bisect.bisect_left([ts for _, ts in log], timestamp)
    return log[index][0] if index < len(log) else None


def translate_by_timestamp(
    source_timestamp: int | None,
    target_offset: int | None,
    committed_target_offset: int | None,
) -> int | None:
    """The target offset to commit, or None to leave the target group where it is.

    ``source_timestamp`` is the timestamp of the record at the committed upstream offset
    (None: not found, e.g. not produced yet); ``target_offset`` is the target's answer for
    that timestamp (None: not replicated yet).
    """
    if source_timestamp is None or target_offset is None:
        return None
    if committed_target_offset is not None and target_offset < committed_target_offset:
        return None
    return target_offset
