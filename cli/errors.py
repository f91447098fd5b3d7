"""One way for every command to report a user error: one line on stderr, exit code 1."""

from __future__ import annotations

from typing import NoReturn

import click


def abort(message: str, code: int = 1) -> NoReturn:
    click.echo(f"Error: {message}", err=True)
    raise SystemExit(code)
