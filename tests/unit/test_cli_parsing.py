"""Property files, table layout, --add-config syntax, ACL operation names, and
kafka-mirrors' usage errors (which are decided before any connection is made)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.broker.properties_file import load_properties, parse_properties
from mirrorsim.cli.cmd_acls import parse_operation
from mirrorsim.cli.cmd_configs import parse_add_config
from mirrorsim.cli.kafka_mirrors import main
from mirrorsim.cli.mirror_actions import TopicPattern
from mirrorsim.cli.output import kafka_list, table
from mirrorsim.client.admin_types import AclOperation

BOOTSTRAP = ["--bootstrap-server", "127.0.0.1:1"]


def test_java_properties_syntax() -> None:
    text = (
        "# comment\n! also a comment\n\n"
        "bootstrap.servers=localhost:9092\n"
        "security.protocol : SASL_SSL\n"
        "sasl.mechanism PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\\n"
        '    username="u" password="p";\n'
        "key\\=with\\:seps=v\\u00e9\\t\n"
        "empty=\n"
    )
    assert parse_properties(text) == {
        "bootstrap.servers": "localhost:9092",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="u" password="p";',
        "key=with:seps": "v\u00e9\t",
        "empty": "",
    }


@given(
    st.dictionaries(
        st.from_regex(r"[a-z][a-z0-9._-]{0,20}", fullmatch=True),
        st.text(
            st.characters(min_codepoint=33, max_codepoint=126, exclude_characters="\\"), max_size=20
        ),
    )
)
def test_simple_properties_round_trip(props: dict[str, str]) -> None:
    assert parse_properties("".join(f"{k}={v}\n" for k, v in props.items())) == props


def test_table_aligns_columns_and_kafka_list_formats_like_java() -> None:
    assert table(("MIRROR", "TOPICS"), [("my-mirror", 2), ("m", 10)]) == (
        "MIRROR    TOPICS\nmy-mirror 2\nm         10"
    )
    assert kafka_list(["a", "b"]) == "[a, b]"


def test_add_config_keeps_bracketed_lists_together() -> None:
    assert parse_add_config("a=1,b=[0:4,1:5],c = x ") == {"a": "1", "b": "0:4,1:5", "c": "x"}
    assert parse_add_config("mirror.replication.throttled.replicas=[0:4]") == {
        "mirror.replication.throttled.replicas": "0:4"
    }


@pytest.mark.parametrize(
    ("name", "operation"),
    [
        ("Create", AclOperation.CREATE),
        ("AlterConfigs", AclOperation.ALTER_CONFIGS),
        ("DescribeConfigs", AclOperation.DESCRIBE_CONFIGS),
        ("IdempotentWrite", AclOperation.IDEMPOTENT_WRITE),
        ("ALL", AclOperation.ALL),
        ("cluster_action", AclOperation.CLUSTER_ACTION),
    ],
)
def test_acl_operation_names(name: str, operation: AclOperation) -> None:
    assert parse_operation(name) is operation


def test_topic_patterns_match_whole_names() -> None:
    pattern = TopicPattern("test-.*")
    assert pattern.select(["test-a", "my-test-b", "test-"]) == ["test-", "test-a"]
    assert not pattern.is_plain_name
    assert TopicPattern("my.topic").is_plain_name


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (
            [],
            "Error: Exactly one of --create, --add, --remove, --pause, --resume, --delete, "
            "--list, --describe, --alter must be specified",
        ),
        (
            ["--list", "--describe"],
            "Error: Exactly one of --create, --add, --remove, --pause, "
            "--resume, --delete, --list, --describe, --alter must be specified",
        ),
        (["--create", "--mirror", "m"], "Error: --create requires --mirror-config"),
        (["--add", "--mirror", "m"], "Error: --add requires --topic"),
        (["--remove", "--topic", "t"], "Error: --remove requires --mirror"),
        (["--delete"], "Error: --delete requires --mirror"),
        (["--list", "--topic", "t"], "Error: --topic cannot be used with --list"),
        (
            ["--pause", "--mirror", "m", "--topic", "t", "--replication-factor", "2"],
            "Error: --replication-factor cannot be used with --pause",
        ),
        (["--add", "--mirror", "m", "--topic", "("], "Error: Invalid --topic regex '(': "),
        (["--list", "--bogus"], "Error: No such option '--bogus'."),
        (
            ["--add", "--mirror", "m", "--topic", "t", "--replication-factor", "0"],
            "Error: Invalid value for '--replication-factor'",
        ),
    ],
)
def test_usage_errors_are_one_line_with_exit_code_1(args: list[str], error: str) -> None:
    result = CliRunner().invoke(main, [*BOOTSTRAP, *args])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith(error)
    assert result.stderr.count("\n") == 1


def test_bootstrap_server_is_required() -> None:
    result = CliRunner().invoke(main, ["--list"])
    assert (result.exit_code, result.stderr) == (1, "Error: Missing option '--bootstrap-server'.\n")


def test_help_lists_the_spec_options() -> None:
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    assert "This tool helps to create cluster mirrors and add topics to them." in result.stdout
    for option in (
        "--add",
        "--alter",
        "--bootstrap-server",
        "--command-config",
        "--create",
        "--delete",
        "--describe",
        "--help",
        "--list",
        "--mirror",
        "--mirror-config",
        "--pause",
        "--remove",
        "--replication-factor",
        "--resume",
        "--topic",
        "--version",
        "--json",
    ):
        assert f"  {option}" in result.stdout


def test_a_file_is_read_as_java_reads_it_iso_8859_1(tmp_path: Path) -> None:
    path = tmp_path / "client.properties"
    path.write_bytes(b"sasl.username=j\xf6rg\nsasl.password=caf\\u00e9\n")
    assert load_properties(path) == {"sasl.username": "j\u00f6rg", "sasl.password": "caf\u00e9"}
