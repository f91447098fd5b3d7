"""Scenario parsing, assertions, and the built-in drills run end to end in process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mirrorsim.cli.main import cli
from mirrorsim.drills import ScenarioError, parse_scenario, resolve, run_drill
from mirrorsim.drills.assertions import evaluate, parse_assertion
from mirrorsim.drills.catalog import builtin_paths
from mirrorsim.drills.scenario import with_cluster_mode

FAST = [
    "planned-migration",
    "first-mirror",
    "transactional-stop",
    "groups-beyond-log-end",
    "compaction-tombstone",
]
SLOW = ["disaster-failover", "failback-case-b"]
UNCLEAN = ["ule-before-detection", "ule-undetectable", "ule-supported"]
PROCESSES = ["disaster-failover-processes"]
GROUP_PROTOCOLS = ["failover-consumer-and-share-groups"]
TOPOLOGIES = [
    "topology-fan-out",
    "topology-fan-in",
    "topology-chain",
    "topology-bidirectional",
]


def _minimal(**step: object) -> dict[str, object]:
    return {
        "name": "x",
        "description": "d",
        "clusters": [{"name": "primary"}],
        "steps": [step],
    }


def test_every_builtin_drill_parses_and_lists() -> None:
    result = CliRunner().invoke(cli, ["drill", "list"])
    assert result.exit_code == 0
    listed = [line.split()[0] for line in result.output.splitlines()]
    assert listed == sorted(builtin_paths())
    named = FAST + SLOW + UNCLEAN + PROCESSES + TOPOLOGIES + GROUP_PROTOCOLS
    named += ["retention", "demo"]
    assert set(named) == set(listed)


def test_a_cluster_runs_in_process_unless_its_mode_says_processes() -> None:
    document = {
        **_minimal(start_clusters={}),
        "clusters": [{"name": "primary", "mode": "processes"}, {"name": "backup"}],
    }
    modes = [c.mode for c in parse_scenario(document).clusters]
    assert modes == ["processes", "in-process"]
    switched = with_cluster_mode(resolve("disaster-failover"), "processes")
    assert {c.mode for c in switched.clusters} == {"processes"}
    with pytest.raises(ScenarioError, match="mode must be one of"):
        parse_scenario({**document, "clusters": [{"name": "primary", "mode": "threads"}]})


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ({"explode": {}}, "unknown step"),
        ({"kill_cluster": {"cluster": "nowhere"}}, "not a cluster of this scenario"),
        ({"kill_cluster": {"cluster": "primary", "signal": 9}}, "unexpected keyword"),
        ({"kill_cluster": {}}, "missing a required argument"),
    ],
)
def test_a_bad_step_fails_at_load_time(step: dict[str, object], message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        parse_scenario(_minimal(**step))


def test_assertions_compare_paths_and_literals() -> None:
    results = {"rpo_records": 0, "dup": {"g": 2}, "keys": {"c": {"t": ["k3"]}}, "n": 5}
    checks = {
        "rpo_records == 0": True,
        "dup.g < n": True,
        "dup.g >= 3": False,
        '"k3" in keys.c.t': True,
        '"k4" not in keys.c.t': True,
        "missing.path == 0": False,
        "keys.c.t == [k3]": True,
    }
    for text, expected in checks.items():
        assert evaluate(parse_assertion(text), results).passed is expected, text


def test_an_assertion_without_an_operator_is_refused() -> None:
    with pytest.raises(ScenarioError):
        parse_assertion("rpo_records")


async def _run(name: str, tmp_path: Path) -> dict[str, object]:
    result = await run_drill(resolve(name), tmp_path / "report", work_dir=tmp_path / "data")
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert (tmp_path / "report" / "timeline.png").stat().st_size > 0
    failed = [a for a in report["assertions"] if not a["passed"]]
    assert result.error is None, result.error
    assert failed == []
    assert result.passed
    return report


@pytest.mark.parametrize("name", FAST)
async def test_builtin_drill(name: str, tmp_path: Path) -> None:
    await _run(name, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", SLOW)
async def test_builtin_drill_slow(name: str, tmp_path: Path) -> None:
    await _run(name, tmp_path)


@pytest.mark.parametrize("name", TOPOLOGIES)
async def test_topology_drill(name: str, tmp_path: Path) -> None:
    """Fan-out, fan-in, chain and bidirectional mirroring: every mirrored partition ends
    with its source's log end offset and exactly its bytes (the drill's assertions)."""
    report = await _run(name, tmp_path)
    assert report["assertions"] and all(a["passed"] for a in report["assertions"])


async def test_builtin_drill_retention(tmp_path: Path) -> None:
    await _run("retention", tmp_path)


async def test_planned_migration_numbers(tmp_path: Path) -> None:
    report = await _run("planned-migration", tmp_path)
    results = report["results"]
    assert results["rpo_records"] == 0
    assert results["duplicates"] == {"billing": 0}
    assert {e["kind"] for e in report["events"]} >= {"failover", "mirror stopped"}
    assert report["timeline"], "the sampler recorded the run"


async def test_consumer_and_share_groups_reprocess_at_most_what_the_sync_missed(
    tmp_path: Path,
) -> None:
    """Both groups resume on backup from synced offsets: each re-processes fewer records
    than the whole stream it read on primary, within the bound of the drill's assertions
    (done in the last two sync intervals, or in flight). Every record written to backup
    after the failover is read by both."""
    report = await _run("failover-consumer-and-share-groups", tmp_path)
    results = report["results"]
    for name in ("billing", "jobs"):
        on_primary = results["consumed"][name] - results["reprocessed"][name]
        assert results["reprocessed"][name] <= results["reprocess_bound"][name] < on_primary
        assert results["in_flight"][name] <= results["reprocess_bound"][name]
    moved = {e["detail"] for e in report["events"] if e["kind"] == "consumer moved"}
    assert moved == {"billing -> backup", "jobs -> backup"}


@pytest.mark.slow
async def test_unclean_election_before_detection_is_cut_on_failback(tmp_path: Path) -> None:
    results = (await _run("ule-before-detection", tmp_path))["results"]
    assert results["last_mirrored_epoch"] == {"orders-0": 0}
    assert results["failback_truncation"] == {"orders-0": 1}
    assert results["failback_dropped_offsets"] == {"orders-0": 3}
    assert results["lost_sample"] == ["u1", "u2", "u3"]
    assert results["verification"]["converged"] is True


@pytest.mark.slow
async def test_unclean_election_after_lme_truncation_stays_undetected(tmp_path: Path) -> None:
    results = (await _run("ule-undetectable", tmp_path))["results"]
    assert results["values"]["primary"]["orders"][5:8] == ["u5", "u6", "u7"]
    assert results["verification"]["converged"] is False
    assert results["verification"]["first_unexpected"] == {"orders-0": 5}


@pytest.mark.slow
async def test_unclean_election_support_fails_then_converges(tmp_path: Path) -> None:
    report = await _run("ule-supported", tmp_path)
    results = report["results"]
    assert results["values"]["primary"] == results["values"]["backup"]
    assert results["verification"]["converged"] is True
    assert "topics removed" in {e["kind"] for e in report["events"]}


@pytest.mark.slow
@pytest.mark.xfail(
    strict=False,
    reason="open: after the SIGKILLed primary's brokers restart (as new, fenced incarnations), "
    "the failback re-sends the whole log instead of the divergent tail "
    "(failback_bytes == full_log_bytes); see docs/drills.md",
)
async def test_disaster_failover_kills_broker_processes_with_sigkill(tmp_path: Path) -> None:
    report = await _run("disaster-failover-processes", tmp_path)
    kills = [e["detail"] for e in report["events"] if e["kind"] == "cluster killed"]
    assert kills == ["primary (SIGKILL)"]
    broker_log = (tmp_path / "data" / "primary" / "broker-1.log").read_text()
    # two lives, one clean stop: the end of the drill's; the first life ended in SIGKILL
    assert broker_log.count("broker 1 of cluster") == 2
    assert broker_log.count("broker 1 stopped") == 1
    results = report["results"]
    assert results["records_lost"] == results["rpo_records"]
    assert 0 < results["failback_bytes"] < results["full_log_bytes"]


async def test_adding_topics_again_counts_those_already_in_the_mirror_as_added(
    tmp_path: Path,
) -> None:
    """An add whose answer was lost (a timeout on a loaded machine) may have added its
    topics: its retry gets TOPIC_ALREADY_IN_MIRROR. The step used to retry that until its
    30 s ran out (a topology drill failed so); a topic DescribeMirrors lists in this mirror
    now counts as added, while one held by another mirror still fails the step."""
    fast = {"mirror.metadata.refresh.interval.ms": 300, "mirror.topic.replication.factor": 1}
    document = {
        "name": "add-twice",
        "description": "the same topics added to a mirror twice, then to another mirror",
        "clusters": [{"name": "a", "configs": fast}, {"name": "b", "configs": fast}],
        "steps": [
            {"start_clusters": {}},
            {"create_topics": {"cluster": "a", "topics": [{"name": "orders", "partitions": 1}]}},
            {"create_mirror": {"cluster": "b", "mirror": "m", "source": "a", "topics": ["orders"]}},
            {"add_topics": {"cluster": "b", "mirror": "m", "topics": ["orders"], "timeout": 5}},
            {"create_mirror": {"cluster": "b", "mirror": "other", "source": "a"}},
            {"add_topics": {"cluster": "b", "mirror": "other", "topics": ["orders"], "timeout": 2}},
        ],
    }
    result = await run_drill(parse_scenario(document), tmp_path / "report", work_dir=tmp_path)
    assert result.error is not None
    assert result.error.startswith("step 6 (add_topics) failed"), result.error
    assert "TOPIC_ALREADY_IN_MIRROR" in result.error
