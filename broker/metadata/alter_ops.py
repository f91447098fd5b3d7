"""IncrementalAlterConfigs semantics as a pure function: (overrides, ops) -> new overrides.

APPEND and SUBTRACT apply only to LIST configs and start from the override, or from the
default when there is none, as Kafka's ConfigAdminManager does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mirrorsim.broker.config import ConfigDef, ConfigError, ConfigType
from mirrorsim.protocol.acl import AlterConfigOpType


@dataclass(frozen=True, slots=True)
class AlterConfigOp:
    name: str
    op: AlterConfigOpType
    value: str | None


def apply_alter_ops(
    overrides: Mapping[str, str],
    ops: Sequence[AlterConfigOp],
    definitions: Mapping[str, ConfigDef],
) -> dict[str, str]:
    """The overrides after ``ops``; raises ConfigError for an op Kafka refuses."""
    names = [op.name for op in ops]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(f"Error due to duplicate config keys: {', '.join(duplicates)}")
    result = dict(overrides)
    for op in ops:
        definition = definitions.get(op.name)
        if definition is None:
            raise ConfigError(f"Unknown config name: {op.name}")
        if op.op == AlterConfigOpType.SET:
            if op.value is None:
                raise ConfigError(f"Null value not supported for : {op.name}")
            result[op.name] = op.value
        elif op.op == AlterConfigOpType.DELETE:
            result.pop(op.name, None)
        else:
            if definition.type != ConfigType.LIST:
                verb = "append" if op.op == AlterConfigOpType.APPEND else "subtract"
                raise ConfigError(f"Config value {verb} is not allowed for config key: {op.name}")
            current = result.get(op.name, definition.default or "")
            items = [v for v in current.split(",") if v]
            given = [v.strip() for v in (op.value or "").split(",") if v.strip()]
            if op.op == AlterConfigOpType.APPEND:
                items += [v for v in given if v not in items]
            else:
                items = [v for v in items if v not in given]
            result[op.name] = ",".join(items)
    return result
