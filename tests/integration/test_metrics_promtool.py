"""A scrape of a broker that mirrors passes ``promtool check metrics`` (Prometheus's own
lint: naming, suffixes, units, help texts) without a single problem."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import urllib.request
from typing import Any

import pytest

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic

pytestmark = pytest.mark.skipif(
    shutil.which("promtool") is None, reason="needs promtool (Debian's prometheus)"
)


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        return response.read().decode()


def _promtool_check(text: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["promtool", "check", "metrics"],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


async def test_a_mirroring_brokers_scrape_has_no_lint_problem(
    start_cluster: Any, wait_for: Any
) -> None:
    source = await start_cluster("primary")
    destination = await start_cluster("backup")
    async with Admin(source.bootstrap) as admin:
        (await admin.create_topics([NewTopic("orders", 2, 1)])).all()
    async with Admin(destination.bootstrap) as admin:
        await admin.create_mirror("m1", {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror("m1", ["orders"])).all()
    (broker,) = destination.brokers

    async def scrape_with_lag() -> str | None:
        text = await asyncio.to_thread(_scrape, broker.metrics.port)
        return text if "kafka_server_fetcher_lag_consumer_lag{" in text else None

    text = await wait_for(scrape_with_lag, timeout=30, message="mirror fetcher lag in the scrape")
    result = await asyncio.to_thread(_promtool_check, text)

    assert (result.returncode, result.stdout + result.stderr) == (0, "")
