"""What the mirror management handlers need from the mirror coordinator.

The coordinator sits above the handlers (it drives the broker's replica manager, log and
metadata store), so the handlers name only this port and the broker hands them the
coordinator's ``MirrorLifecycle`` as ``broker.mirror_lifecycle``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from mirrorsim.coordinator.state_machine import MirrorPartitionState, StateUpdate, StoredState
from mirrorsim.protocol.errors import KafkaError

TopicResults = dict[str, KafkaError | None]
"""Per topic: None when done, else the error to answer for it."""


@runtime_checkable
class MirrorListingView(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def bootstrap(self) -> str: ...

    @property
    def cluster_id(self) -> str: ...

    @property
    def topic_count(self) -> int: ...


@runtime_checkable
class MirrorLifecyclePort(Protocol):
    async def create_mirror(self, name: str, configs: Mapping[str, str | None]) -> None: ...

    async def list_mirrors(self) -> Sequence[MirrorListingView]: ...

    async def delete_mirror(self, name: str) -> None: ...

    async def add_topics(
        self, mirror: str, topics: Iterable[tuple[str, uuid.UUID | None]]
    ) -> TopicResults: ...

    async def remove_topics(self, mirror: str, topics: Iterable[str]) -> TopicResults: ...

    async def pause_topics(self, mirror: str, topics: Iterable[str]) -> TopicResults: ...

    async def resume_topics(self, mirror: str, topics: Iterable[str]) -> TopicResults: ...

    def mirror_coordinator(self, mirror: str) -> int:
        """The broker id coordinating ``mirror`` (FindCoordinator's MIRROR key), -1 if none."""
        ...


@runtime_checkable
class MirrorPartitionView(Protocol):
    """What DescribeMirrors reads of a partition the leader's mirror coordinator drives."""

    @property
    def state(self) -> MirrorPartitionState: ...

    @property
    def last_mirror_epoch(self) -> int: ...

    @property
    def source_high_watermark(self) -> int: ...


@runtime_checkable
class MirrorStatesPort(Protocol):
    """The mirror coordinator's access to ``__mirror_state``, which ReadMirrorStates and
    WriteMirrorStates serve (the local stores) and DescribeMirrors reads (any store)."""

    @property
    def topic_exists(self) -> bool: ...

    async def read(
        self, mirror: str, topic: str, partitions: Iterable[int]
    ) -> Mapping[int, StoredState]: ...

    def read_local(
        self, mirror: str, topic: str, partitions: Iterable[int]
    ) -> Mapping[int, StoredState]: ...

    async def write_local(
        self, mirror: str, topic: str, updates: Mapping[int, StateUpdate]
    ) -> None: ...

    async def remove_topics_local(self, mirror: str, topics: set[str]) -> None: ...


@runtime_checkable
class MirrorCoordinatorView(Protocol):
    """The parts of the broker's mirror coordinator the state RPC handlers use."""

    @property
    def states(self) -> MirrorStatesPort: ...

    @property
    def partitions(self) -> Mapping[tuple[str, int], MirrorPartitionView]: ...
