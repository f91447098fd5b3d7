"""Fixtures every interop suite shares: the cluster and topic names unique to each case."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from mirrorsim.broker.cluster import ClusterRunner

GROUP_CONFIGS = {"group.initial.rebalance.delay.ms": 0}


@pytest.fixture
async def cluster(start_cluster: Any) -> AsyncIterator[ClusterRunner]:
    yield await start_cluster(configs=GROUP_CONFIGS)


@pytest.fixture
def topic_names(request: pytest.FixtureRequest) -> Iterator[str]:
    """A topic name unique to this test case (Kafka's legal characters only)."""
    name = "".join(c if c.isalnum() or c in "-_" else "-" for c in request.node.name)
    yield name[:200]
