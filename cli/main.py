"""The `mirrorsim` command: a click group whose subcommands live one per module."""

from __future__ import annotations

import importlib

import click

from mirrorsim.cli.errors import OneLineErrors

# command name -> "module:attribute"; modules are imported only when the command runs.
COMMANDS: dict[str, str] = {
    "acls": "mirrorsim.cli.cmd_acls:acls",
    "chaos": "mirrorsim.cli.cmd_chaos:chaos",
    "compare": "mirrorsim.cli.cmd_compare:compare",
    "configs": "mirrorsim.cli.cmd_configs:configs",
    "demo": "mirrorsim.cli.cmd_demo:demo",
    "drill": "mirrorsim.cli.cmd_drill:drill",
    "dump-log": "mirrorsim.cli.cmd_dump_log:dump_log_command",
    "features": "mirrorsim.cli.cmd_features:features",
    "groups": "mirrorsim.cli.cmd_groups:groups",
    "share-groups": "mirrorsim.cli.cmd_share_groups:share_groups",
    "topics": "mirrorsim.cli.cmd_topics:topics",
    "up": "mirrorsim.cli.cmd_up:up",
    "verify": "mirrorsim.cli.cmd_verify:verify",
}


class LazyGroup(OneLineErrors):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        return getattr(importlib.import_module(module_name), attr)


@click.group(cls=LazyGroup)
@click.version_option(package_name="mirrorsim")
def cli() -> None:
    """mirrorsim: a Kafka-compatible broker with cluster mirroring built in."""
