"""IncrementalAlterConfigs semantics as a pure function, with properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.broker.config import TOPIC_CONFIGS, ConfigError
from mirrorsim.broker.metadata.alter_ops import AlterConfigOp, apply_alter_ops
from mirrorsim.protocol.acl import AlterConfigOpType

DEFINITIONS = {name: d.definition for name, d in TOPIC_CONFIGS.items()}
POLICIES = st.lists(st.sampled_from(["delete", "compact"]), unique=True)


def test_set_delete_append_subtract() -> None:
    result = apply_alter_ops(
        {"retention.ms": "5", "segment.ms": "9"},
        [
            AlterConfigOp("retention.ms", AlterConfigOpType.SET, "7"),
            AlterConfigOp("segment.ms", AlterConfigOpType.DELETE, None),
            AlterConfigOp("cleanup.policy", AlterConfigOpType.APPEND, "compact"),
        ],
        DEFINITIONS,
    )
    assert result == {"retention.ms": "7", "cleanup.policy": "delete,compact"}
    after = apply_alter_ops(
        result, [AlterConfigOp("cleanup.policy", AlterConfigOpType.SUBTRACT, "delete")], DEFINITIONS
    )
    assert after["cleanup.policy"] == "compact"


@pytest.mark.parametrize(
    "ops",
    [
        [AlterConfigOp("retention.ms", AlterConfigOpType.APPEND, "1")],
        [AlterConfigOp("nope", AlterConfigOpType.SET, "1")],
        [AlterConfigOp("retention.ms", AlterConfigOpType.SET, None)],
        [
            AlterConfigOp("retention.ms", AlterConfigOpType.SET, "1"),
            AlterConfigOp("retention.ms", AlterConfigOpType.DELETE, None),
        ],
    ],
)
def test_refused_ops(ops: list[AlterConfigOp]) -> None:
    with pytest.raises(ConfigError):
        apply_alter_ops({}, ops, DEFINITIONS)


@given(current=POLICIES, given_items=POLICIES)
def test_append_then_subtract_leaves_no_given_item(
    current: list[str], given_items: list[str]
) -> None:
    overrides = {"cleanup.policy": ",".join(current)} if current else {}
    value = ",".join(given_items)
    appended = apply_alter_ops(
        overrides, [AlterConfigOp("cleanup.policy", AlterConfigOpType.APPEND, value)], DEFINITIONS
    )
    items = appended["cleanup.policy"].split(",")
    assert len(items) == len(set(items))
    assert set(given_items) <= set(items)
    subtracted = apply_alter_ops(
        appended, [AlterConfigOp("cleanup.policy", AlterConfigOpType.SUBTRACT, value)], DEFINITIONS
    )
    remaining = [v for v in subtracted["cleanup.policy"].split(",") if v]
    assert not set(remaining) & set(given_items)


@given(st.dictionaries(st.sampled_from(sorted(DEFINITIONS)), st.text(min_size=1), max_size=5))
def test_delete_every_key_empties_overrides(overrides: dict[str, str]) -> None:
    ops = [AlterConfigOp(name, AlterConfigOpType.DELETE, None) for name in overrides]
    assert apply_alter_ops(overrides, ops, DEFINITIONS) == {}
