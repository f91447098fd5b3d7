"""``mirrorsim up``: run every cluster of a config in the foreground until SIGINT/SIGTERM."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import click

from mirrorsim.broker.cluster import (
    DEFAULT_CLUSTERS_TOML,
    ClusterRunner,
    ClusterSpec,
    cluster_spec_from_properties,
    parse_cluster_specs,
)
from mirrorsim.broker.config import ConfigError
from mirrorsim.broker.log_format import LOG_LEVELS, configure_logging
from mirrorsim.broker.metadata.store import MetadataStoreUnavailable
from mirrorsim.broker.supervisor import BrokerStartError, ProcessCluster
from mirrorsim.cli.errors import abort


async def run_clusters(specs: list[ClusterSpec], stop: asyncio.Event) -> None:
    """Start the clusters, announce each one, wait for ``stop``, then shut all down."""
    runners: list[ClusterRunner] = []
    try:
        for spec in specs:
            runner = ClusterRunner(spec)
            await runner.start()
            runners.append(runner)
            click.echo(f"cluster {runner.name} ready bootstrap={runner.bootstrap}")
        await stop.wait()
    finally:
        for runner in reversed(runners):
            await runner.stop()


async def run_process_clusters(specs: list[ClusterSpec], stop: asyncio.Event) -> None:
    """As ``run_clusters``, with every broker its own supervised OS process."""
    clusters: list[ProcessCluster] = []
    try:
        for spec in specs:
            cluster = ProcessCluster(spec, restart_on_crash=True)
            await cluster.start()
            clusters.append(cluster)
            click.echo(f"cluster {cluster.name} ready bootstrap={cluster.bootstrap}")
        await stop.wait()
    finally:
        for cluster in reversed(clusters):
            await cluster.stop()


async def _main(specs: list[ClusterSpec], processes: bool) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        if processes:
            await run_process_clusters(specs, stop)
        else:
            await run_clusters(specs, stop)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


@click.command()
@click.option(
    "--config",
    "config_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Cluster config (TOML). Default: clusters primary (9092) and backup (9192).",
)
@click.option(
    "--server-properties",
    "properties_files",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A Kafka server.properties: one one-broker cluster named after the file "
    "(repeatable; instead of --config).",
)
@click.option("--processes", is_flag=True, help="Run each broker as its own OS process.")
@click.option(
    "--log-level",
    type=click.Choice(LOG_LEVELS, case_sensitive=False),
    default="INFO",
    show_default=True,
    help="Broker log lines on stderr from this level up (in-process brokers).",
)
def up(
    config_file: Path | None,
    properties_files: tuple[Path, ...],
    processes: bool,
    log_level: str,
) -> None:
    """Start the clusters of the config and run until interrupted."""
    configure_logging(log_level)
    if config_file and properties_files:
        abort("give either --config or --server-properties, not both")
    try:
        specs = _specs(config_file, properties_files)
    except ConfigError as exc:
        abort(f"{config_file or ', '.join(map(str, properties_files)) or 'default config'}: {exc}")
    for spec in specs:
        for line in spec.report():
            click.echo(f"warning: {line}", err=True)
    try:
        asyncio.run(_main(specs, processes))
    except (OSError, BrokerStartError) as exc:
        abort(f"cannot start: {exc}")
    except (ConfigError, MetadataStoreUnavailable) as exc:
        abort(str(exc))
    click.echo("all clusters stopped")


def _specs(config_file: Path | None, properties_files: tuple[Path, ...]) -> list[ClusterSpec]:
    if properties_files:
        return [cluster_spec_from_properties(path.stem, path) for path in properties_files]
    if config_file:
        return parse_cluster_specs(config_file.read_text(), base_dir=config_file.parent)
    return parse_cluster_specs(DEFAULT_CLUSTERS_TOML)
