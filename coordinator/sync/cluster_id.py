"""The source cluster id guard run before every sync cycle of a mirror.

The first cluster id a mirror sees is recorded; from then on a different id (a
misconfigured bootstrap, a source cluster rebuilt behind the same address) halts metadata
sync for that mirror, since syncing topics, offsets and ACLs from another cluster would
silently corrupt the destination. A source that reports no cluster id cannot be checked
and halts sync the same way.
"""

from __future__ import annotations

import enum


class ClusterIdCheck(enum.Enum):
    OK = "ok"
    FIRST_SEEN = "first-seen"
    MISMATCH = "mismatch"

    @property
    def halts_sync(self) -> bool:
        return self is ClusterIdCheck.MISMATCH


def check_source_cluster_id(expected: str | None, observed: str | None) -> ClusterIdCheck:
    """`expected` is the id recorded for the mirror, None before its first cycle; on
    FIRST_SEEN the caller records `observed`."""
    if observed is None:
        return ClusterIdCheck.MISMATCH
    if expected is None:
        return ClusterIdCheck.FIRST_SEEN
    return ClusterIdCheck.OK if observed == expected else ClusterIdCheck.MISMATCH
