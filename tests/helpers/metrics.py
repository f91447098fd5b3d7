"""Reading the Prometheus metrics endpoint over HTTP."""

from __future__ import annotations

import asyncio
import urllib.parse
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def http_get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, ""


async def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    status, text = await asyncio.to_thread(http_get, f"http://127.0.0.1:{port}/metrics")
    assert status == 200
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }
