"""The one definition of a mirror partition's lag (DescribeMirrors' LAG, the ConsumerLag gauge)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.coordinator.mirror_lag import mirror_lag

offsets = st.integers(-1, 2**40)


@given(offsets, offsets)
def test_lag_is_unknown_while_an_offset_is_and_never_negative(
    source: int, destination: int
) -> None:
    lag = mirror_lag(source, destination)
    if source < 0 or destination < 0:
        assert lag is None
    else:
        assert lag == max(0, source - destination)


def test_a_destination_ahead_of_the_last_seen_source_high_watermark_has_no_lag() -> None:
    assert mirror_lag(100, 120) == 0
    assert mirror_lag(120, 100) == 20
