"""A mirror partition's lag, as DescribeMirrors reports it and the ConsumerLag gauge shows it.

One definition for both, so the LAG column and the metric never disagree: the source high
watermark the partition's fetcher last saw minus the destination's log end offset, never
below zero, and unknown while either offset is.
"""

from __future__ import annotations


def mirror_lag(source_high_watermark: int, destination_log_end: int) -> int | None:
    """The lag, or None when an offset is unknown (DescribeMirrors then reports -1)."""
    if source_high_watermark < 0 or destination_log_end < 0:
        return None
    return max(0, source_high_watermark - destination_log_end)
