"""``mirrorsim configs --entity-type users``: SCRAM credentials as kafka-configs.sh takes them.

``--add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]'`` creates or
replaces a credential (``iterations`` defaults to 4096, as in Kafka), ``--delete-config
SCRAM-SHA-256`` removes one, ``--describe`` lists the user's mechanisms and iterations.
The password is salted on this side: only the salted form goes over the wire.
"""

from __future__ import annotations

from collections.abc import Mapping

import click

from mirrorsim.cli.admin_session import CLIENT_ID, run
from mirrorsim.cli.errors import abort
from mirrorsim.client import Admin
from mirrorsim.client.admin import SCRAM_MECHANISM_CODES
from mirrorsim.client.admin_types import ScramUpsertion

DEFAULT_ITERATIONS = 4096


def scram_upsertions(user: str, configs: Mapping[str, str]) -> list[ScramUpsertion]:
    """``{"SCRAM-SHA-256": "iterations=8192,password=x"}`` as upsertions; aborts on
    anything kafka-configs.sh refuses for a user."""
    upsertions = []
    for mechanism, value in configs.items():
        if mechanism not in SCRAM_MECHANISM_CODES:
            abort(f"Invalid config(s): {mechanism} (users take SCRAM-SHA-256 and SCRAM-SHA-512)")
        settings = dict(_setting(item) for item in value.split(",") if item.strip())
        if "password" not in settings:
            abort(f"{mechanism}: a password is required, as in [iterations=8192,password=...]")
        unknown = sorted(set(settings) - {"password", "iterations"})
        if unknown:
            abort(f"{mechanism}: unknown setting(s) {', '.join(unknown)}")
        iterations = settings.get("iterations", str(DEFAULT_ITERATIONS))
        if not iterations.isdigit():
            abort(f"{mechanism}: iterations must be a number, got {iterations!r}")
        upsertions.append(ScramUpsertion(user, mechanism, settings["password"], int(iterations)))
    return upsertions


def _setting(item: str) -> tuple[str, str]:
    name, sep, value = item.partition("=")
    if not sep:
        abort(f"Invalid SCRAM setting {item!r}: expected name=value")
    return name.strip(), value.strip()


def alter_users(
    bootstrap: str,
    client_config: dict[str, str],
    user: str,
    added: Mapping[str, str],
    deleted: list[str],
) -> None:
    upsertions = scram_upsertions(user, added)
    for mechanism in deleted:
        if mechanism not in SCRAM_MECHANISM_CODES:
            abort(f"Invalid config(s): {mechanism} (users take SCRAM-SHA-256 and SCRAM-SHA-512)")
    run(_alter(bootstrap, client_config, upsertions, [(user, m) for m in deleted]))
    click.echo(f"Completed updating config for user {user}.")


def describe_user(bootstrap: str, client_config: dict[str, str], user: str) -> None:
    _print_credentials(user, run(_describe(bootstrap, client_config, user)))


def describe_all_users(bootstrap: str, client_config: dict[str, str]) -> None:
    for user, credentials in sorted(run(_describe_all(bootstrap, client_config)).items()):
        _print_credentials(user, credentials)


def has_scram_credentials(bootstrap: str, client_config: dict[str, str], user: str) -> bool:
    return user in run(_describe_all(bootstrap, client_config))


def _print_credentials(user: str, credentials: list[tuple[str, int]]) -> None:
    listed = ", ".join(f"{m}=iterations={i}" for m, i in credentials)
    click.echo(f"SCRAM credential configs for user-principal '{user}' are {listed}")


async def _alter(
    bootstrap: str,
    config: dict[str, str],
    upsertions: list[ScramUpsertion],
    deletions: list[tuple[str, str]],
) -> None:
    async with Admin(bootstrap, config=config, client_id=CLIENT_ID) as admin:
        (await admin.alter_user_scram_credentials(upsertions, deletions)).all()


async def _describe_all(bootstrap: str, config: dict[str, str]) -> dict[str, list[tuple[str, int]]]:
    async with Admin(bootstrap, config=config, client_id=CLIENT_ID) as admin:
        return await admin.describe_user_scram_credentials()


async def _describe(bootstrap: str, config: dict[str, str], user: str) -> list[tuple[str, int]]:
    async with Admin(bootstrap, config=config, client_id=CLIENT_ID) as admin:
        return (await admin.describe_user_scram_credentials([user]))[user]
