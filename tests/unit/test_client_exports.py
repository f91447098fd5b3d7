"""The Admin client's public types are importable from ``mirrorsim.client`` itself."""

from __future__ import annotations

import inspect

import mirrorsim.client
from mirrorsim.client import admin_types


def test_every_public_admin_type_is_exported() -> None:
    public = {
        name
        for name, value in vars(admin_types).items()
        if inspect.isclass(value)
        and value.__module__.startswith("mirrorsim.")
        and not name.startswith("_")
    }
    assert public - set(mirrorsim.client.__all__) == set()
    assert all(getattr(mirrorsim.client, name) is getattr(admin_types, name) for name in public)
