"""``kafka-mirrors``: KIP-1279's kafka-mirrors.sh, option for option.

Exactly one action option is required; an action given options it does not take, or
missing ones it needs, is a usage error. Usage errors and failures alike print one line
on stderr and exit 1.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from mirrorsim.cli.admin_session import CLIENT_ID, command_config, kafka_errors, run
from mirrorsim.cli.errors import abort
from mirrorsim.cli.mirror_actions import (
    TopicPattern,
    add_topics,
    alter_mirror_config,
    change_topics,
)
from mirrorsim.cli.output import describe_error, echo_json, kafka_list, table
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import MirrorDescription, MirrorListing, Results
from mirrorsim.client.config import ClientConfig

API_TIMEOUT = "default.api.timeout.ms"
DEFAULT_TIMEOUT_MS = ClientConfig.default_api_timeout_ms
LIST_HEADER = ("MIRROR", "TOPICS", "CLUSTER-ID", "BOOTSTRAP-SERVER")
DESCRIBE_HEADER = (
    "MIRROR",
    "TOPIC",
    "PARTITION",
    "SOURCE-OFFSET",
    "DESTINATION-OFFSET",
    "LAG",
    "STATE",
)


@dataclass(frozen=True, slots=True)
class Action:
    required: frozenset[str] = frozenset()
    optional: frozenset[str] = frozenset()


_TOPIC_ACTION = Action(frozenset({"mirror", "topic"}))
ACTIONS: dict[str, Action] = {
    "create": Action(frozenset({"mirror", "mirror_config"})),
    "add": Action(frozenset({"mirror", "topic"}), frozenset({"replication_factor"})),
    "remove": _TOPIC_ACTION,
    "pause": _TOPIC_ACTION,
    "resume": _TOPIC_ACTION,
    "delete": Action(frozenset({"mirror"})),
    "list": Action(),
    "describe": Action(optional=frozenset({"mirror"})),
    "alter": Action(frozenset({"mirror", "mirror_config"})),
}
ACTION_OPTIONS = frozenset({"mirror", "topic", "mirror_config", "replication_factor"})

TOPIC_RESULT_LINES: dict[str, Callable[[int, str, str], str]] = {
    "add": lambda n, m, t: f"Added {n} topic(s) to mirror {m}: {t}",
    "remove": lambda n, m, t: f"Removed {n} topic(s) from mirror {m}: {t}",
    "pause": lambda n, m, t: f"Paused mirroring for {n} topic(s) in mirror {m}: {t}",
    "resume": lambda n, m, t: f"Resumed mirroring for {n} topic(s) in mirror {m}: {t}",
}


def _option_flag(name: str) -> str:
    return "--" + name.replace("_", "-")


class OneLineUsageErrors(click.Command):
    """Click's usage errors as the tool's one ``Error:`` line with exit code 1."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            abort(exc.format_message())


@dataclass
class Request:
    action: str
    options: dict[str, Any] = field(default_factory=dict)
    as_json: bool = False


def choose_action(flags: dict[str, bool], options: dict[str, Any]) -> str:
    """The one action given, checked against the options it needs and takes."""
    chosen = [name for name in ACTIONS if flags[name]]
    if len(chosen) != 1:
        names = ", ".join(_option_flag(a) for a in ACTIONS)
        abort(f"Exactly one of {names} must be specified")
    action = chosen[0]
    spec = ACTIONS[action]
    given = {name for name in ACTION_OPTIONS if options[name] is not None}
    for name in sorted(spec.required - given):
        abort(f"{_option_flag(action)} requires {_option_flag(name)}")
    for name in sorted(given - spec.required - spec.optional):
        abort(f"{_option_flag(name)} cannot be used with {_option_flag(action)}")
    return action


@click.command(
    cls=OneLineUsageErrors,
    context_settings={"max_content_width": 100},
)
@click.option(
    "--add", is_flag=True, help="Add topic(s) to an existing cluster mirror (supports regex)."
)
@click.option(
    "--alter", is_flag=True, help="Alter the configuration of an existing cluster mirror."
)
@click.option(
    "--bootstrap-server",
    required=True,
    metavar="<String: server to connect to>",
    help="REQUIRED: The destination Kafka server to connect to.",
)
@click.option(
    "--command-config",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="<String: command config property file>",
    help="Property file containing configs to be passed to Admin Client.",
)
@click.option("--create", is_flag=True, help="Create a new cluster mirror from a source cluster.")
@click.option(
    "--delete", is_flag=True, help="Delete a cluster mirror (it must be empty or only stopped)."
)
@click.option(
    "--describe", is_flag=True, help="Describe a cluster mirror including partition lag and state."
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--list", "list_", is_flag=True, help="List all cluster mirrors.")
@click.option("--mirror", metavar="<String: mirror>", help="The name of the cluster mirror.")
@click.option(
    "--mirror-config",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="<String: mirror config property file>",
    help="Property file containing source cluster configs for mirroring.",
)
@click.option(
    "--pause",
    is_flag=True,
    help="Pause mirroring for topic(s) matching the pattern (supports regex).",
)
@click.option(
    "--remove",
    is_flag=True,
    help="Remove topic(s) from an existing cluster mirror (supports regex).",
)
@click.option(
    "--replication-factor",
    type=click.IntRange(1, 32767),
    metavar="<Short: replication-factor>",
    help="The replication factor to use for the mirror topic. If not specified, uses the "
    "destination cluster's default.",
)
@click.option(
    "--resume",
    is_flag=True,
    help="Resume mirroring for previously paused topic(s) matching the pattern (supports regex).",
)
@click.option(
    "--topic",
    metavar="<String: topic>",
    help="Topic name or regex pattern to match topics (e.g., 'my-topic' or 'test-.*').",
)
@click.option(
    "--timeout",
    "timeout_ms",
    type=click.IntRange(min=1),
    metavar="<Long: timeout (ms)>",
    help="How long to wait for the cluster before giving up (default.api.timeout.ms, "
    f"default {DEFAULT_TIMEOUT_MS}).",
)
@click.version_option(package_name="mirrorsim", help="Display the version.")
@click.help_option("--help", help="Print usage information.")
def main(
    bootstrap_server: str,
    command_config: Path | None,
    mirror: str | None,
    mirror_config: Path | None,
    topic: str | None,
    replication_factor: int | None,
    timeout_ms: int | None,
    as_json: bool,
    list_: bool,
    **flags: bool,
) -> None:
    """This tool helps to create cluster mirrors and add topics to them."""
    options = {
        "mirror": mirror,
        "topic": topic,
        "mirror_config": mirror_config,
        "replication_factor": replication_factor,
    }
    action = choose_action({**flags, "list": list_}, options)
    if topic is not None:
        with kafka_errors():
            options["topic"] = TopicPattern(topic)
    admin_config = _read_properties(command_config)
    if timeout_ms is not None:
        admin_config[API_TIMEOUT] = str(timeout_ms)
    mirror_properties = _read_properties(mirror_config)
    patience = admin_config.get(API_TIMEOUT, str(DEFAULT_TIMEOUT_MS))
    outcome = run(
        _perform(action, bootstrap_server, admin_config, options, mirror_properties),
        waiting_for=f"{bootstrap_server} to answer (gives up after {patience} ms, see --timeout)",
    )
    _print(action, mirror, outcome, as_json)


def _read_properties(path: Path | None) -> dict[str, str]:
    if path is None:
        return {}
    return command_config(path) if path.exists() else abort(f"{path} does not exist")


async def _perform(
    action: str,
    bootstrap: str,
    admin_config: dict[str, str],
    options: dict[str, Any],
    mirror_properties: dict[str, str],
) -> Any:
    mirror = options["mirror"]
    async with Admin(bootstrap, config=admin_config, client_id=CLIENT_ID) as admin:
        if action == "create":
            return await admin.create_mirror(mirror, mirror_properties)
        if action == "alter":
            return await alter_mirror_config(admin, mirror, mirror_properties)
        if action == "delete":
            return await admin.delete_mirror(mirror)
        if action == "list":
            return await admin.list_mirrors()
        if action == "describe":
            return await admin.describe_mirrors([mirror] if mirror else None)
        pattern = options["topic"]
        if action == "add":
            return await add_topics(admin, mirror, pattern, options["replication_factor"])
        return await change_topics(admin, action, mirror, pattern)


def _print(action: str, mirror: str | None, outcome: Any, as_json: bool) -> None:
    if action == "list":
        _print_list(outcome, as_json)
    elif action == "describe":
        _print_describe(outcome, as_json)
    elif action in TOPIC_RESULT_LINES:
        _print_topic_results(action, mirror or "", outcome, as_json)
    else:
        line = {
            "create": f"Created mirror {mirror}",
            "delete": f"Deleted mirror {mirror}",
            "alter": f"Completed updating config for mirror {mirror}.",
        }[action]
        if as_json:
            echo_json({"action": action, "mirror": mirror})
        else:
            click.echo(line)


def _print_list(mirrors: list[MirrorListing], as_json: bool) -> None:
    ordered = sorted(mirrors, key=lambda m: m.name)
    if as_json:
        echo_json(
            [
                {
                    "mirror": m.name,
                    "topics": m.topic_count,
                    "clusterId": m.source_cluster_id,
                    "bootstrapServer": m.source_bootstrap,
                }
                for m in ordered
            ]
        )
        return
    rows = [(m.name, m.topic_count, m.source_cluster_id, m.source_bootstrap) for m in ordered]
    click.echo(table(LIST_HEADER, rows))


def _print_describe(described: dict[str, MirrorDescription], as_json: bool) -> None:
    rows = [
        (name, p.topic, p.partition, p.source_offset, p.destination_offset, p.lag, p.state)
        for name in sorted(described)
        for p in sorted(described[name].partitions, key=lambda p: (p.topic, p.partition))
    ]
    if as_json:
        keys = ("mirror", "topic", "partition", "sourceOffset", "destinationOffset", "lag", "state")
        echo_json([dict(zip(keys, row, strict=True)) for row in rows])
        return
    click.echo(table(DESCRIBE_HEADER, rows))


def _print_topic_results(action: str, mirror: str, results: Results[str], as_json: bool) -> None:
    """The success line for the topics that made it, then one error line per error code."""
    succeeded = sorted(t for t, error in results.items() if error is None)
    failed = results.failed
    if as_json:
        echo_json(
            {
                "action": action,
                "mirror": mirror,
                "topics": succeeded,
                "errors": {t: describe_error(e) for t, e in sorted(failed.items())},
            }
        )
    elif succeeded:
        click.echo(TOPIC_RESULT_LINES[action](len(succeeded), mirror, kafka_list(succeeded)))
    if failed:
        lines = dict.fromkeys(describe_error(failed[t]) for t in sorted(failed))
        for line in lines:
            click.echo(f"Error: {line}", err=True)
        raise SystemExit(1)
