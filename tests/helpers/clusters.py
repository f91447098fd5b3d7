"""Types of the in-process cluster fixtures."""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any, Protocol

from mirrorsim.broker.cluster import ClusterRunner


class StartCluster(Protocol):
    def __call__(
        self,
        name: str = "primary",
        brokers: int = 1,
        configs: Mapping[str, Any] | None = None,
    ) -> Awaitable[ClusterRunner]: ...
