"""One way for every command to report a user error: one line on stderr, exit code 1."""

from __future__ import annotations

from typing import Any, NoReturn

import click

INSTALL_HINTS: dict[str, str] = {"psycopg": "pip install 'mirrorsim[postgres]'"}
"""Optional packages and the command that installs each; any other is ``pip install NAME``."""


def abort(message: str, code: int = 1) -> NoReturn:
    click.echo(f"Error: {message}", err=True)
    raise SystemExit(code)


def missing_package(exc: ModuleNotFoundError) -> str:
    """The one line for a package the command needs but the install lacks."""
    name = (exc.name or "").split(".")[0]
    hint = INSTALL_HINTS.get(name, f"pip install {name}")
    return f"this command needs the {name} package, which is not installed: {hint}"


class OneLineErrors(click.Group):
    """A command group whose subcommands all report click's usage errors (bad options,
    missing arguments, unknown commands) and missing packages as one ``Error:`` line with
    exit code 1, as ``kafka-mirrors`` does, instead of click's usage block and exit code 2."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.ClickException as exc:
            _report(exc)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            _report(exc)
        except ModuleNotFoundError as exc:
            abort(missing_package(exc))


def _report(exc: click.ClickException) -> NoReturn:
    """A group called without a command asked for its help: print it, exit 0."""
    if isinstance(exc, click.exceptions.NoArgsIsHelpError):
        click.echo(exc.ctx.get_help())
        raise SystemExit(0)
    abort(exc.format_message())
