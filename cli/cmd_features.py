"""``mirrorsim features``: kafka-features.sh, for ``mirror.version``.

``describe`` prints one tab-separated line per supported feature; ``upgrade`` and
``downgrade`` take ``--feature NAME=LEVEL``, ``disable`` takes ``--feature NAME`` (level
0). Each feature's outcome is one line on stdout, worded as kafka-features.sh words it;
when any failed, the command ends with ``N out of M operation(s) failed.`` on stderr and
exit code 1. ``--dry-run`` asks the controller to validate only.
"""

from __future__ import annotations

from pathlib import Path

import click

from mirrorsim.cli.admin_session import CLIENT_ID, run
from mirrorsim.cli.admin_session import command_config as command_config_properties
from mirrorsim.cli.errors import abort
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import FeatureMetadata, FeatureUpdate, Results, UpgradeType

SHORT_RANGE = range(-(2**15), 2**15)


def parse_feature_level(text: str) -> tuple[str, int]:
    """``NAME=LEVEL`` as kafka-features.sh parses it (a Java short, blanks trimmed)."""
    name, sep, level = text.partition("=")
    if not sep:
        abort(f"Can't parse feature=level string {text}: equals sign not found.")
    level = level.strip()
    try:
        parsed = int(level)
    except ValueError:
        parsed = None
    if parsed is None or parsed not in SHORT_RANGE:
        abort(f"Can't parse feature=level string {text}: unable to parse {level} as a short.")
    return name.strip(), parsed


def feature_updates(
    levels: list[tuple[str, int]], upgrade_type: UpgradeType
) -> dict[str, FeatureUpdate]:
    updates: dict[str, FeatureUpdate] = {}
    for name, level in levels:
        if name in updates:
            abort(f"Feature {name} was specified more than once.")
        updates[name] = FeatureUpdate(level, upgrade_type)
    return updates


def describe_lines(metadata: FeatureMetadata) -> list[str]:
    epoch = metadata.finalized_features_epoch
    lines = []
    for name, supported in sorted(metadata.supported_features.items()):
        finalized = metadata.finalized_features.get(name)
        lines.append(
            f"Feature: {name}\tSupportedMinVersion: {supported.min_version}\t"
            f"SupportedMaxVersion: {supported.max_version}\t"
            f"FinalizedVersionLevel: {0 if finalized is None else finalized.max_version_level}\t"
            f"Epoch: {'-' if epoch is None else epoch}"
        )
    return lines


def outcome_lines(
    op: str, updates: dict[str, FeatureUpdate], results: Results[str], dry_run: bool
) -> list[str]:
    lines = []
    for name in sorted(results):
        level = updates[name].max_version_level
        error = results[name]
        if error is not None:
            action = f"disable {name}" if op == "disable" else f"{op} {name} to {level}"
            lines.append(f"{'Can not' if dry_run else 'Could not'} {action}. {error.message}")
        else:
            done = "disabled." if op == "disable" else f"{op}d to {level}."
            lines.append(f"{name} {'can be' if dry_run else 'was'} {done}")
    return lines


@click.group()
@click.option("--bootstrap-server", required=True, help="The Kafka server to connect to.")
@click.option(
    "--command-config",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Property file containing configs to be passed to Admin Client.",
)
@click.pass_context
def features(ctx: click.Context, bootstrap_server: str, command_config: Path | None) -> None:
    """Describe, upgrade, downgrade or disable finalized features (mirror.version)."""
    ctx.obj = (bootstrap_server, command_config_properties(command_config))


@features.command()
@click.pass_obj
def describe(target: tuple[str, dict[str, str]]) -> None:
    """Describe the supported and finalized features."""
    for line in describe_lines(run(_describe(*target))):
        click.echo(line)


@features.command()
@click.option("--feature", "levels", multiple=True, help="NAME=LEVEL to upgrade to.")
@click.option("--dry-run", is_flag=True, help="Validate without performing the upgrade.")
@click.pass_obj
def upgrade(target: tuple[str, dict[str, str]], levels: tuple[str, ...], dry_run: bool) -> None:
    """Upgrade one or more features."""
    parsed = [parse_feature_level(text) for text in levels]
    _update(target, "upgrade", feature_updates(parsed, UpgradeType.UPGRADE), dry_run)


@features.command()
@click.option("--feature", "levels", multiple=True, help="NAME=LEVEL to downgrade to.")
@click.option("--unsafe", is_flag=True, help="Perform an unsafe (lossy) downgrade.")
@click.option("--dry-run", is_flag=True, help="Validate without performing the downgrade.")
@click.pass_obj
def downgrade(
    target: tuple[str, dict[str, str]], levels: tuple[str, ...], unsafe: bool, dry_run: bool
) -> None:
    """Downgrade one or more features."""
    parsed = [parse_feature_level(text) for text in levels]
    _update(target, "downgrade", feature_updates(parsed, _downgrade_type(unsafe)), dry_run)


@features.command()
@click.option("--feature", "names", multiple=True, help="NAME of a feature to disable.")
@click.option("--unsafe", is_flag=True, help="Perform an unsafe (lossy) downgrade.")
@click.option("--dry-run", is_flag=True, help="Validate without disabling.")
@click.pass_obj
def disable(
    target: tuple[str, dict[str, str]], names: tuple[str, ...], unsafe: bool, dry_run: bool
) -> None:
    """Disable one or more features (finalize them at level 0)."""
    parsed = [(name, 0) for name in names]
    _update(target, "disable", feature_updates(parsed, _downgrade_type(unsafe)), dry_run)


def _downgrade_type(unsafe: bool) -> UpgradeType:
    return UpgradeType.UNSAFE_DOWNGRADE if unsafe else UpgradeType.SAFE_DOWNGRADE


def _update(
    target: tuple[str, dict[str, str]], op: str, updates: dict[str, FeatureUpdate], dry_run: bool
) -> None:
    if not updates:
        abort(f"You must specify at least one feature to {op}")
    results = run(_send_updates(*target, updates, dry_run))
    for line in outcome_lines(op, updates, results, dry_run):
        click.echo(line)
    if results.failed:
        abort(f"{len(results.failed)} out of {len(updates)} operation(s) failed.")


async def _describe(bootstrap: str, config: dict[str, str]) -> FeatureMetadata:
    async with Admin(bootstrap, config=config, client_id=CLIENT_ID) as admin:
        return await admin.describe_features()


async def _send_updates(
    bootstrap: str, config: dict[str, str], updates: dict[str, FeatureUpdate], dry_run: bool
) -> Results[str]:
    async with Admin(bootstrap, config=config, client_id=CLIENT_ID) as admin:
        return await admin.update_features(updates, validate_only=dry_run)
