"""Finalized feature levels (Kafka's KIP-584 feature versioning) and the rules for changing them.

mirrorsim has one feature, ``mirror.version``: at level 1 the brokers serve the cluster
mirroring operator RPCs, at level 0 they refuse them. The store keeps a row only for a
feature an operator has set; a feature without a row runs at its default level. mirrorsim
exists to run cluster mirroring, so ``mirror.version`` defaults to 1, where Apache
Kafka's early-access releases start it at 0.

The update rules follow Kafka's controller, in its order and with its messages, so
``kafka-features.sh`` users meet the same refusals: an unknown upgrade type, a negative
level, a level outside the supported range (or a feature nobody supports), a downgrade
without a downgrade type, and a "downgrade" to a higher level all fail with
INVALID_UPDATE_VERSION. A request is applied whole or not at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.features import MIRROR_VERSION, UpgradeType


@dataclass(frozen=True, slots=True)
class VersionRange:
    min_version: int
    max_version: int

    def __contains__(self, level: object) -> bool:
        return isinstance(level, int) and self.min_version <= level <= self.max_version

    def __str__(self) -> str:
        return f"[{self.min_version}-{self.max_version}]"


SUPPORTED_FEATURES: Mapping[str, VersionRange] = MappingProxyType(
    {MIRROR_VERSION: VersionRange(0, 1)}
)
DEFAULT_LEVELS: Mapping[str, int] = MappingProxyType({MIRROR_VERSION: 1})


@dataclass(frozen=True, slots=True)
class FinalizedFeatures:
    """The levels an operator set (``stored``) and the epoch of the last change (0: none)."""

    stored: Mapping[str, int] = field(default_factory=dict)
    epoch: int = 0

    def level(self, feature: str) -> int:
        return self.stored.get(feature, DEFAULT_LEVELS.get(feature, 0))

    def levels(self) -> dict[str, int]:
        """The effective level of every feature that has one, defaults included."""
        names = sorted({*SUPPORTED_FEATURES, *self.stored})
        return {name: self.level(name) for name in names}


@dataclass(frozen=True, slots=True)
class FeatureUpdate:
    feature: str
    max_version_level: int
    upgrade_type: UpgradeType = UpgradeType.UPGRADE


def update_error(
    update: FeatureUpdate, current_level: int, controller_id: int
) -> KafkaError | None:
    """Why ``update`` may not move the feature from ``current_level``, or None if it may."""
    level = update.max_version_level
    if update.upgrade_type is UpgradeType.UNKNOWN:
        return _invalid(update, "The controller does not support the given upgrade type.")
    if level < 0:
        return _invalid(update, "A feature version cannot be less than 0.")
    supported = SUPPORTED_FEATURES.get(update.feature)
    if supported is None:
        return _invalid(update, f"Local controller {controller_id} does not support this feature.")
    if level not in supported:
        return _invalid(
            update, f"Local controller {controller_id} only supports versions {supported}"
        )
    downgrade = update.upgrade_type is not UpgradeType.UPGRADE
    if level < current_level and not downgrade:
        return _invalid(
            update,
            "Can't downgrade the version of this feature without setting the upgrade type "
            "to either safe or unsafe downgrade.",
        )
    if level > current_level and downgrade:
        return _invalid(update, "Can't downgrade to a newer version.")
    return None


def apply_updates(
    current: FinalizedFeatures, updates: Iterable[FeatureUpdate], controller_id: int
) -> dict[str, int]:
    """The levels to store for ``updates``; raises the first update's refusal, if any."""
    levels: dict[str, int] = {}
    for update in updates:
        error = update_error(update, current.level(update.feature), controller_id)
        if error is not None:
            raise error
        levels[update.feature] = update.max_version_level
    return levels


def _invalid(update: FeatureUpdate, reason: str) -> KafkaError:
    return KafkaError(
        ErrorCode.INVALID_UPDATE_VERSION,
        f"Invalid update version {update.max_version_level} for feature {update.feature}. {reason}",
    )
