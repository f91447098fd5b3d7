"""Shared fixtures: free ports, condition waits and in-process clusters.

- ``free_port()``: a TCP port free on 127.0.0.1 right now.
- ``await wait_for(predicate, timeout=5.0)``: poll a sync or async predicate until it is
  truthy (returns its value) or fail the test after ``timeout`` seconds.
- ``await start_cluster(name="primary", brokers=1, configs=None)``: a running cluster in
  ``tmp_path`` (brokers bind free ports); ``.bootstrap`` is "127.0.0.1:PORT,...". Every
  cluster a test starts is stopped at teardown.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from helpers.clusters import StartCluster
from helpers.hang_report import REPORT_BEFORE_TIMEOUT_S, report_hang_after
from hypothesis import settings

from mirrorsim.broker.cluster import ClusterRunner, ClusterSpec
from mirrorsim.broker.ports import free_port
from mirrorsim.drills.polling import DrillTimeout, wait_until

POLL_INTERVAL_S = 0.01

# Examples that touch real files or sockets take as long as the machine's load makes them;
# a per-example deadline would measure the machine, not the code.
settings.register_profile("mirrorsim", deadline=None)
settings.load_profile("mirrorsim")


async def wait_for(
    predicate: Callable[[], Any] | Callable[[], Awaitable[Any]],
    timeout: float = 5.0,
    message: str = "condition",
) -> Any:
    """Poll until ``predicate()`` is truthy; its value is returned. Fails the test after
    ``timeout``; an error the predicate raises fails it at once."""
    try:
        return await wait_until(predicate, timeout, message, retry_on=(), interval=POLL_INTERVAL_S)
    except DrillTimeout as timed_out:
        pytest.fail(str(timed_out))


@pytest.fixture(autouse=True)
def _report_a_hang(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test about to hit pytest-timeout prints its pending asyncio tasks first."""
    marker = request.node.get_closest_marker("timeout")
    configured = request.config.getoption("timeout", None) or request.config.getini("timeout")
    timeout = float(marker.args[0]) if marker and marker.args else float(configured or 0)
    if timeout <= REPORT_BEFORE_TIMEOUT_S:
        yield
        return
    with report_hang_after(timeout - REPORT_BEFORE_TIMEOUT_S, request.node.nodeid):
        yield


@pytest.fixture(name="free_port", scope="session")
def free_port_fixture() -> Callable[[], int]:
    return free_port


@pytest.fixture(name="wait_for")
def wait_for_fixture() -> Callable[..., Awaitable[Any]]:
    return wait_for


@pytest.fixture
async def start_cluster(tmp_path: Path) -> AsyncIterator[StartCluster]:
    runners: list[ClusterRunner] = []

    async def start(
        name: str = "primary",
        brokers: int = 1,
        configs: Mapping[str, Any] | None = None,
    ) -> ClusterRunner:
        spec = ClusterSpec(
            name=name,
            data_dir=tmp_path / name,
            brokers=brokers,
            port=0,
            configs=dict(configs or {}),
        )
        runner = ClusterRunner(spec)
        await runner.start()
        runners.append(runner)
        return runner

    yield start
    for runner in reversed(runners):
        await runner.stop()
