"""The README's Walkthrough, executed: every command must exit 0 and print what is shown.

Blocks taking part are fenced as ```` ```bash walkthrough ```` under the ``## Walkthrough``
heading; the ```` ```text ```` block right after one (blank lines allowed between) lists
lines its commands must print to stdout, in that order, other lines allowed in between.
Runs of blanks match any run of blanks (table columns widen with their values) and
``<name>`` placeholders match the values that vary (see ``PLACEHOLDERS``). A block fenced
```` ```bash walkthrough repeat ```` is run again until its lines appear, as a reader
would re-run ``--describe`` until LAG is 0.

The commands run in a temp dir holding a ``.venv`` link to this interpreter's venv, each
in its own ``bash``, except the two that manage the background clusters (``START_CLUSTERS``
and ``STOP_CLUSTERS``), which the test performs itself. The README's fixed ports become
free ones in one place, ``PortMap.rewrite``, applied to commands, expected lines and the
cluster config alike.
"""

from __future__ import annotations

import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mirrorsim.broker.cluster import DEFAULT_CLUSTERS_TOML

README = Path(__file__).resolve().parents[2] / "README.md"
HEADING = "## Walkthrough"
START_CLUSTERS = ".venv/bin/mirrorsim up &"
STOP_CLUSTERS = "kill %1 && wait %1"
README_PORTS = (9092, 9192)
BROKERS_PER_CLUSTER = 3

PLACEHOLDERS: dict[str, str] = {
    "<cluster-id>": r"[A-Za-z0-9_-]{22}",
    "<id>": r"\d+",
    "<count>": r"\d+",
    "<timestamp>": r"\d+",
    "<position>": r"\d+",
    "<crc>": r"\d+",
}

# Metrics would listen on broker port + 1000, which nobody reserved for the test.
METRICS_OFF_TOML = """
[cluster.primary.config]
"metrics.port" = 0

[cluster.backup.config]
"metrics.port" = 0
"""

COMMAND_TIMEOUT_S = 240.0
REPEAT_TIMEOUT_S = 60.0
CLUSTER_START_TIMEOUT_S = 60.0
CLUSTER_STOP_TIMEOUT_S = 60.0

_FENCE = re.compile(r"^```(.*)$")
_PLACEHOLDER = re.compile("|".join(re.escape(p) for p in PLACEHOLDERS))


@dataclass(frozen=True)
class Step:
    commands: tuple[str, ...]
    expected: tuple[str, ...]
    repeat: bool
    line: int


def walkthrough_steps(markdown: str) -> list[Step]:
    """The walkthrough blocks of the README, each with the output block that follows it."""
    lines = markdown.splitlines()
    start = lines.index(HEADING)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    blocks = list(_fenced_blocks(lines, start + 1, end))
    steps: list[Step] = []
    for index, (info, body, first_line) in enumerate(blocks):
        words = info.split()
        if words[:2] != ["bash", "walkthrough"]:
            continue
        following = blocks[index + 1] if index + 1 < len(blocks) else None
        expected: tuple[str, ...] = ()
        if following is not None and following[0] == "text":
            between = lines[first_line + len(body) + 1 : following[2] - 1]
            if not any(line.strip() for line in between):
                expected = tuple(following[1])
        steps.append(Step(_commands(body), expected, "repeat" in words[2:], first_line))
    return steps


def _fenced_blocks(lines: list[str], start: int, end: int) -> Iterator[tuple[str, list[str], int]]:
    """(info string, body lines, index of the first body line) of every fence in range."""
    i = start
    while i < end:
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        close = next(j for j in range(i + 1, end) if lines[j] == "```")
        yield opening.group(1).strip(), lines[i + 1 : close], i + 1
        i = close + 1


def _commands(body: list[str]) -> tuple[str, ...]:
    """One command per line; a trailing backslash continues it; comments are skipped."""
    commands: list[str] = []
    pending = ""
    for line in body:
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1]
            continue
        commands.append(pending + line)
        pending = ""
    return tuple(commands)


def line_pattern(expected: str) -> re.Pattern[str]:
    """An expected line as a regex: placeholders as their patterns, blank runs as ``\\s+``."""
    parts = []
    for word in expected.split():
        pieces = _PLACEHOLDER.split(word)
        names = _PLACEHOLDER.findall(word)
        regex = re.escape(pieces[0])
        for name, piece in zip(names, pieces[1:], strict=True):
            regex += PLACEHOLDERS[name] + re.escape(piece)
        parts.append(regex)
    return re.compile(r"\s+".join(parts))


def missing_lines(expected: tuple[str, ...], output: str) -> list[str]:
    """The expected lines not found in ``output`` in order (all of them after the first miss)."""
    remaining = iter(line.strip() for line in output.splitlines())
    for position, line in enumerate(expected):
        pattern = line_pattern(line)
        if not any(pattern.fullmatch(candidate) for candidate in remaining):
            return list(expected[position:])
    return []


@dataclass
class PortMap:
    """Each README port (a cluster's first broker) to a free one, brokers 2..N following."""

    bases: dict[int, int]
    mapping: dict[int, int] = field(init=False)

    def __post_init__(self) -> None:
        self.mapping = {
            readme + k: free + k
            for readme, free in self.bases.items()
            for k in range(BROKERS_PER_CLUSTER)
        }

    def rewrite(self, text: str) -> str:
        """The one place where the README's literal ports become the test's ports."""
        words = "|".join(str(port) for port in self.mapping)
        return re.sub(rf"\b({words})\b", lambda m: str(self.mapping[int(m.group(1))]), text)


def _consecutive_free_ports(count: int, taken: set[int]) -> int:
    """A port P with P..P+count-1 all free on 127.0.0.1 right now and none in ``taken``."""
    while True:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base = int(probe.getsockname()[1])
        candidates = range(base, base + count)
        if (
            base + count <= 65536
            and taken.isdisjoint(candidates)
            and all(_bindable(port) for port in candidates[1:])
        ):
            return base


def _bindable(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


class BackgroundClusters:
    """``mirrorsim up`` as a subprocess, its stdout read line by line by a thread."""

    def __init__(self, workdir: Path, config: Path) -> None:
        self.process = subprocess.Popen(
            [".venv/bin/mirrorsim", "up", "--config", str(config)],
            cwd=workdir,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def output_until(self, expected: tuple[str, ...], timeout: float) -> str:
        """Everything printed until every expected line appeared, in order, or it exited."""
        deadline = time.monotonic() + timeout
        collected: list[str] = []
        while missing_lines(expected, "\n".join(collected)):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                line = self.lines.get(timeout=remaining)
            except queue.Empty:
                break
            if line is None:
                break
            collected.append(line)
        return "\n".join(collected)

    def stop(self) -> int:
        """SIGTERM, as ``kill %1`` sends, then the exit code once output is drained."""
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=CLUSTER_STOP_TIMEOUT_S)
        self._reader.join(timeout=CLUSTER_STOP_TIMEOUT_S)
        return code

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._reader.join(timeout=CLUSTER_STOP_TIMEOUT_S)


def _drain(lines: queue.Queue[str | None]) -> str:
    collected = []
    while True:
        try:
            line = lines.get_nowait()
        except queue.Empty:
            return "\n".join(collected)
        if line is not None:
            collected.append(line)


def test_walkthrough_blocks_are_well_formed() -> None:
    steps = walkthrough_steps(README.read_text())
    assert steps, f"no ```bash walkthrough blocks under {HEADING}"
    assert steps[0].commands == (START_CLUSTERS,)
    assert steps[-1].commands[0] == STOP_CLUSTERS
    commands = [c for step in steps for c in step.commands]
    assert commands.count(START_CLUSTERS) == 1
    assert commands.count(STOP_CLUSTERS) == 1
    for step in steps:
        assert step.expected or not step.repeat, f"README line {step.line}: repeat needs output"
        for line in step.expected:
            unknown = set(re.findall(r"<[a-z-]+>", line)) - set(PLACEHOLDERS)
            assert not unknown, f"README line {step.line}: unknown placeholder(s) {unknown}"


def test_expected_lines_match_tables_and_placeholders() -> None:
    output = (
        "MIRROR    TOPICS CLUSTER-ID             BOOTSTRAP-SERVER\n"
        "my-mirror 1      lBq12jYZRp-9wF3M9MPopg 127.0.0.1:9092\n"
    )
    expected = (
        "MIRROR TOPICS CLUSTER-ID BOOTSTRAP-SERVER",
        "my-mirror 1 <cluster-id> 127.0.0.1:9092",
    )
    assert missing_lines(expected, output) == []
    assert missing_lines(("my-mirror 2 <cluster-id> 127.0.0.1:9092",), output) != []
    assert missing_lines(tuple(reversed(expected)), output) == [expected[0]]


def test_ports_are_rewritten_as_whole_numbers() -> None:
    ports = PortMap({9092: 40000, 9192: 41000})
    assert (
        ports.rewrite("127.0.0.1:9092,127.0.0.1:9094 port = 9192 offset 19092")
        == "127.0.0.1:40000,127.0.0.1:40002 port = 41000 offset 19092"
    )


class Walkthrough:
    """Runs the steps in one temp dir, against clusters on the ports of ``ports``."""

    def __init__(self, workdir: Path, ports: PortMap) -> None:
        self.workdir = workdir
        self.ports = ports
        self.config = workdir / "mirrorsim.toml"
        self.config.write_text(ports.rewrite(DEFAULT_CLUSTERS_TOML) + METRICS_OFF_TOML)
        (workdir / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
        self.clusters: BackgroundClusters | None = None

    def run(self, step: Step) -> None:
        expected = tuple(self.ports.rewrite(line) for line in step.expected)
        deadline = time.monotonic() + REPEAT_TIMEOUT_S
        while True:
            printed = "\n".join(self.perform(command, expected) for command in step.commands)
            missing = missing_lines(expected, printed)
            if not missing or not step.repeat or time.monotonic() > deadline:
                break
        assert not missing, (
            f"README line {step.line}: `{' ; '.join(step.commands)}` did not print "
            f"{missing}\nit printed:\n{printed}"
        )

    def perform(self, readme_command: str, expected: tuple[str, ...]) -> str:
        """Run one command; its stdout (for the clusters: what ``mirrorsim up`` printed)."""
        if readme_command == START_CLUSTERS:
            return self.start_clusters(expected)
        if readme_command == STOP_CLUSTERS:
            return self.stop_clusters()
        command = self.ports.rewrite(readme_command)
        result = subprocess.run(
            ["bash", "-o", "pipefail", "-c", command],
            cwd=self.workdir,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
            check=False,
        )
        assert result.returncode == 0, (
            f"`{command}` exited {result.returncode}\n"
            f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
        )
        return result.stdout

    def start_clusters(self, expected: tuple[str, ...]) -> str:
        self.clusters = BackgroundClusters(self.workdir, self.config)
        printed = self.clusters.output_until(expected, CLUSTER_START_TIMEOUT_S)
        assert self.clusters.process.poll() is None, (
            f"mirrorsim up exited {self.clusters.process.returncode}:\n{printed}"
        )
        return printed

    def stop_clusters(self) -> str:
        assert self.clusters is not None, "the walkthrough stops clusters it never started"
        code = self.clusters.stop()
        printed = _drain(self.clusters.lines)
        self.clusters = None
        assert code == 0, f"mirrorsim up exited {code} on SIGTERM:\n{printed}"
        return printed

    def close(self) -> None:
        if self.clusters is not None:
            self.clusters.kill()


@pytest.mark.system
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_readme_walkthrough_runs(tmp_path: Path) -> None:
    if shutil.which("kcat") is None:
        pytest.skip("kcat is not installed (scripts/test.sh installs it)")
    taken: set[int] = set()
    bases = {}
    for readme_port in README_PORTS:
        bases[readme_port] = _consecutive_free_ports(BROKERS_PER_CLUSTER, taken)
        taken.update(range(bases[readme_port], bases[readme_port] + BROKERS_PER_CLUSTER))
    walkthrough = Walkthrough(tmp_path, PortMap(bases))
    try:
        for step in walkthrough_steps(README.read_text()):
            walkthrough.run(step)
    finally:
        walkthrough.close()
