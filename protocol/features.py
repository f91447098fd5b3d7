"""Feature-versioning (KIP-584) wire values shared by the broker and the client.

The broker (UpdateFeatures, ApiVersions) and the client (Admin, CLI) both speak these,
so they are defined once here.
"""

from __future__ import annotations

import enum

MIRROR_VERSION = "mirror.version"
"""The finalized feature that gates cluster mirroring (level 1 on, level 0 off)."""


class UpgradeType(enum.IntEnum):
    """UpdateFeatures v1's ``upgrade_type`` (Kafka's ``FeatureUpdate.UpgradeType``)."""

    UNKNOWN = 0
    UPGRADE = 1
    SAFE_DOWNGRADE = 2
    UNSAFE_DOWNGRADE = 3

    @classmethod
    def from_wire(cls, value: int) -> UpgradeType:
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN

    @classmethod
    def from_allow_downgrade(cls, allow_downgrade: bool) -> UpgradeType:
        """UpdateFeatures v0 had a flag where v1 has a type."""
        return cls.SAFE_DOWNGRADE if allow_downgrade else cls.UPGRADE
