"""``mirrorsim acls`` as kafka-acls.sh: --producer/--consumer with --transactional-id and
--idempotent, --principal for listing, --force for removal, a refused --add that prints
nothing but its error, and help text on every option; against a real broker."""

from __future__ import annotations

import asyncio
from typing import Any

import click
from click.testing import CliRunner, Result

from mirrorsim.cli.cmd_acls import acls
from mirrorsim.cli.main import cli


async def run_acls(bootstrap: str, *args: str) -> Result:
    argv = ["acls", "--bootstrap-server", bootstrap, *args]
    return await asyncio.to_thread(CliRunner().invoke, cli, argv)


def _entry(principal: str, operation: str) -> str:
    return f"(principal={principal}, host=*, operation={operation}, permissionType=ALLOW)"


def _pattern(kind: str, name: str) -> str:
    return f"`ResourcePattern(resourceType={kind}, name={name}, patternType=LITERAL)`"


async def test_producer_consumer_principal_listing_and_forced_removal(
    start_cluster: Any,
) -> None:
    bootstrap = (await start_cluster()).bootstrap
    alice, bob = "User:alice", "User:bob"

    producer = await run_acls(
        bootstrap,
        *("--add", "--producer", "--topic", "orders", "--transactional-id", "tx-1"),
        *("--idempotent", "--allow-principal", alice),
    )
    assert producer.exit_code == 0, producer.output
    assert producer.stdout.splitlines() == [
        f"Adding ACLs for resource {_pattern('TOPIC', 'orders')}:",
        _entry(alice, "WRITE"),
        _entry(alice, "DESCRIBE"),
        _entry(alice, "CREATE"),
        f"Adding ACLs for resource {_pattern('TRANSACTIONAL_ID', 'tx-1')}:",
        _entry(alice, "WRITE"),
        _entry(alice, "DESCRIBE"),
        f"Adding ACLs for resource {_pattern('CLUSTER', 'kafka-cluster')}:",
        _entry(alice, "IDEMPOTENT_WRITE"),
    ]
    consumer = await run_acls(
        bootstrap,
        *("--add", "--consumer", "--topic", "orders", "--group", "billing"),
        *("--allow-principal", bob),
    )
    assert consumer.stdout.splitlines() == [
        f"Adding ACLs for resource {_pattern('TOPIC', 'orders')}:",
        _entry(bob, "READ"),
        _entry(bob, "DESCRIBE"),
        f"Adding ACLs for resource {_pattern('GROUP', 'billing')}:",
        _entry(bob, "READ"),
    ]

    listed = await run_acls(bootstrap, "--list", "--principal", bob)
    assert sorted(line for line in listed.stdout.splitlines() if line.startswith("(")) == sorted(
        [_entry(bob, "READ"), _entry(bob, "DESCRIBE"), _entry(bob, "READ")]
    )

    removed = await run_acls(
        bootstrap,
        *("--remove", "--consumer", "--topic", "orders", "--group", "billing"),
        *("--allow-principal", bob, "--force"),
    )
    assert removed.exit_code == 0, removed.output
    listed = await run_acls(bootstrap, "--list", "--principal", bob)
    assert listed.stdout == ""
    listed = await run_acls(bootstrap, "--list", "--principal", alice)
    assert len([line for line in listed.stdout.splitlines() if line.startswith("(")]) == 6


async def test_a_refused_add_prints_only_its_error(start_cluster: Any) -> None:
    bootstrap = (await start_cluster()).bootstrap
    refused = await run_acls(
        bootstrap, "--add", "--topic", "orders", "--operation", "Read", "--allow-principal", "alice"
    )
    assert refused.exit_code == 1
    assert refused.stdout == ""
    assert refused.stderr.startswith("Error: ") and refused.stderr.count("\n") == 1

    missing_group = await run_acls(
        bootstrap, "--add", "--consumer", "--topic", "orders", "--allow-principal", "User:x"
    )
    assert (missing_group.exit_code, missing_group.stderr) == (
        1,
        "Error: --consumer requires --group\n",
    )


def test_every_option_has_help() -> None:
    options = [p for p in acls.params if isinstance(p, click.Option)]
    assert [o.name for o in options if not o.help] == []
