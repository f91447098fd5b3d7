"""``mirrorsim dump-log``: kafka-dump-log.sh for segment files (``.log``, ``.index``,
``.timeindex``), with KIP-1279's ``--mirror-state-decoder`` for ``__mirror_state``."""

from __future__ import annotations

from pathlib import Path

import click

from mirrorsim.cli.errors import abort
from mirrorsim.cli.log_dump import (
    Decoder,
    base_offset_of,
    dump_log,
    dump_offset_index,
    dump_time_index,
)


@click.command(name="dump-log")
@click.option(
    "--files",
    "file_lists",
    multiple=True,
    required=True,
    help="REQUIRED: The comma separated list of data and index log files to be dumped "
    "(.log, .index, .timeindex); repeatable.",
)
@click.option(
    "--max-bytes",
    type=click.IntRange(min=1),
    help="Limit the amount of total batches read in bytes, avoiding reading the whole .log "
    "file(s).",
)
@click.option(
    "--skip-record-metadata",
    is_flag=True,
    help="Whether to skip printing metadata for each record.",
)
@click.option("--print-data-log", is_flag=True, help="Print the records' keys and payloads.")
@click.option("--deep-iteration", is_flag=True, help="Print every record, not only batches.")
@click.option(
    "--mirror-state-decoder",
    is_flag=True,
    help="Decode records of the __mirror_state topic (implies --print-data-log).",
)
def dump_log_command(
    file_lists: tuple[str, ...],
    max_bytes: int | None,
    skip_record_metadata: bool,
    print_data_log: bool,
    deep_iteration: bool,
    mirror_state_decoder: bool,
) -> None:
    """Dump the contents of log segment files, as kafka-dump-log.sh does."""
    files = [Path(name) for names in file_lists for name in names.split(",") if name]
    for path in files:
        if not path.is_file():
            abort(f"{path} is not a file")
    decoder = (
        Decoder.MIRROR_STATE
        if mirror_state_decoder
        else Decoder.TEXT
        if print_data_log
        else Decoder.NONE
    )
    for path in files:
        click.echo(f"Dumping {path}")
        base_offset = base_offset_of(path.name)
        try:
            data = path.read_bytes()
        except OSError as exc:
            abort(f"cannot read {path}: {exc}")
        if path.suffix == ".log":
            lines = dump_log(
                data,
                base_offset=base_offset,
                decoder=decoder,
                deep=deep_iteration,
                max_bytes=max_bytes,
                skip_record_metadata=skip_record_metadata,
            )
        elif path.suffix == ".index":
            lines = dump_offset_index(data, base_offset=base_offset)
        elif path.suffix == ".timeindex":
            lines = dump_time_index(data, base_offset=base_offset)
        else:
            click.echo(f"Ignoring unknown file {path}")
            continue
        for line in lines:
            click.echo(line)
