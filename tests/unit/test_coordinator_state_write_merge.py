"""Coalesced state writes fold to what writing them one by one would leave."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.coordinator.state_client import merged_updates
from mirrorsim.coordinator.state_machine import MirrorPartitionState, StateUpdate

updates = st.builds(
    StateUpdate,
    state=st.none() | st.sampled_from(list(MirrorPartitionState)),
    last_mirror_epoch=st.none() | st.integers(-1, 20),
)
batches = st.lists(st.dictionaries(st.integers(0, 5), updates, max_size=4), max_size=8)


@given(batches)
def test_merged_equals_sequential_writes(batch: list[dict[int, StateUpdate]]) -> None:
    state: dict[int, MirrorPartitionState] = {}
    epochs: dict[int, int] = {}
    for written in batch:
        for p, u in written.items():
            if u.state is not None:
                state[p] = u.state
            if u.last_mirror_epoch is not None:
                epochs[p] = u.last_mirror_epoch
    merged = merged_updates(batch)
    assert {p for written in batch for p in written} == set(merged)
    assert {p: u.state for p, u in merged.items() if u.state is not None} == state
    assert {
        p: u.last_mirror_epoch for p, u in merged.items() if u.last_mirror_epoch is not None
    } == epochs


def test_a_later_state_wins_and_an_earlier_epoch_survives() -> None:
    merged = merged_updates(
        [
            {1: StateUpdate(state=MirrorPartitionState.STOPPING)},
            {1: StateUpdate(last_mirror_epoch=4)},
            {1: StateUpdate(state=MirrorPartitionState.STOPPED)},
        ]
    )
    assert merged == {1: StateUpdate(MirrorPartitionState.STOPPED, 4)}
