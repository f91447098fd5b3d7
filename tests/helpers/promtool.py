"""Checking exposition text with Prometheus's promtool."""

from __future__ import annotations

import asyncio
import shutil
import subprocess

from helpers.metrics import http_get


async def promtool_problems(port: int) -> str:
    """The scrape is read off the event loop, which serves it."""
    if shutil.which("promtool") is None:
        return ""
    _, text = await asyncio.to_thread(http_get, f"http://127.0.0.1:{port}/metrics")
    checked = await asyncio.to_thread(
        subprocess.run,
        ["promtool", "check", "metrics"],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return checked.stdout + checked.stderr
