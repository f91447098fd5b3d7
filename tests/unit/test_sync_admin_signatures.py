"""SyncAdmin mirrors every public Admin coroutine, so the blocking face cannot drift."""

from __future__ import annotations

import inspect

import pytest

from mirrorsim.client import Admin, SyncAdmin

PUBLIC_COROUTINES = sorted(
    name
    for name, member in inspect.getmembers(Admin, inspect.iscoroutinefunction)
    if not name.startswith("_")
)


def test_admin_has_public_coroutines() -> None:
    assert {"create_topics", "describe_mirrors", "start", "close"} <= set(PUBLIC_COROUTINES)


@pytest.mark.parametrize("name", PUBLIC_COROUTINES)
def test_sync_admin_mirrors_the_coroutine(name: str) -> None:
    blocking = SyncAdmin.__dict__.get(name)
    assert blocking is not None, f"SyncAdmin has no {name}()"
    assert not inspect.iscoroutinefunction(blocking)
    assert inspect.signature(blocking) == inspect.signature(getattr(Admin, name))
    assert inspect.getdoc(blocking)


@pytest.mark.parametrize("name", PUBLIC_COROUTINES)
def test_admin_coroutine_has_a_docstring(name: str) -> None:
    assert inspect.getdoc(getattr(Admin, name))
