"""The finalized-feature rules: defaults, Kafka's UpdateFeatures checks, the ApiVersions fields
and the kafka-features.sh argument parsing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.broker.handlers.api_versions import feature_fields
from mirrorsim.broker.metadata.features import (
    FeatureUpdate,
    FinalizedFeatures,
    apply_updates,
    update_error,
)
from mirrorsim.cli.cmd_features import describe_lines, outcome_lines, parse_feature_level
from mirrorsim.client.admin_types import (
    FeatureMetadata,
    FinalizedVersionRange,
    Results,
    SupportedVersionRange,
)
from mirrorsim.client.admin_types import FeatureUpdate as ClientFeatureUpdate
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.features import MIRROR_VERSION, UpgradeType

CONTROLLER = 1
DOWNGRADES = (UpgradeType.SAFE_DOWNGRADE, UpgradeType.UNSAFE_DOWNGRADE)


def message(update: FeatureUpdate, current: int) -> str | None:
    error = update_error(update, current, CONTROLLER)
    if error is not None:
        assert error.code == ErrorCode.INVALID_UPDATE_VERSION
    return None if error is None else error.message


def test_mirror_version_defaults_to_1_until_an_operator_sets_it() -> None:
    assert FinalizedFeatures().level(MIRROR_VERSION) == 1
    assert FinalizedFeatures({MIRROR_VERSION: 0}, epoch=3).level(MIRROR_VERSION) == 0
    assert FinalizedFeatures().levels() == {MIRROR_VERSION: 1}
    assert FinalizedFeatures().level("unknown.feature") == 0


def test_refusals_carry_kafkas_messages() -> None:
    prefix = "Invalid update version {level} for feature {name}. "
    cases = [
        (
            FeatureUpdate(MIRROR_VERSION, 0),
            1,
            "Can't downgrade the version of this feature without setting the upgrade type "
            "to either safe or unsafe downgrade.",
        ),
        (
            FeatureUpdate(MIRROR_VERSION, 1, UpgradeType.SAFE_DOWNGRADE),
            0,
            "Can't downgrade to a newer version.",
        ),
        (FeatureUpdate(MIRROR_VERSION, 2), 1, "Local controller 1 only supports versions [0-1]"),
        (FeatureUpdate(MIRROR_VERSION, -1), 1, "A feature version cannot be less than 0."),
        (FeatureUpdate("share.version", 1), 0, "Local controller 1 does not support this feature."),
        (
            FeatureUpdate(MIRROR_VERSION, 1, UpgradeType.UNKNOWN),
            1,
            "The controller does not support the given upgrade type.",
        ),
    ]
    for update, current, reason in cases:
        expected = prefix.format(level=update.max_version_level, name=update.feature) + reason
        assert message(update, current) == expected


@given(
    level=st.integers(-(2**15), 2**15 - 1),
    current=st.sampled_from([0, 1]),
    upgrade_type=st.sampled_from(list(UpgradeType)),
)
def test_an_update_is_accepted_exactly_when_kafka_accepts_it(
    level: int, current: int, upgrade_type: UpgradeType
) -> None:
    downgrade = upgrade_type in DOWNGRADES
    accepted = (
        upgrade_type is not UpgradeType.UNKNOWN
        and 0 <= level <= 1
        and (level == current or (level > current) != downgrade)
    )
    update = FeatureUpdate(MIRROR_VERSION, level, upgrade_type)
    assert (update_error(update, current, CONTROLLER) is None) == accepted


@given(st.lists(st.tuples(st.sampled_from([MIRROR_VERSION, "other"]), st.integers(-1, 2))))
def test_a_request_is_applied_whole_or_refused_whole(pairs: list[tuple[str, int]]) -> None:
    current = FinalizedFeatures()
    updates = [FeatureUpdate(name, level, UpgradeType.SAFE_DOWNGRADE) for name, level in pairs]
    errors = [update_error(u, current.level(u.feature), CONTROLLER) for u in updates]
    refusals = [e for e in errors if e is not None]
    if refusals:
        with pytest.raises(KafkaError) as raised:
            apply_updates(current, updates, CONTROLLER)
        assert raised.value.message == refusals[0].message
    else:
        assert apply_updates(current, updates, CONTROLLER) == {
            u.feature: u.max_version_level for u in updates
        }


def test_api_versions_v3_omits_ranges_starting_at_0_and_v4_lists_them() -> None:
    enabled = FinalizedFeatures()
    assert feature_fields(enabled, 3) == {
        "supported_features": [],
        "finalized_features_epoch": 0,
        "finalized_features": [
            {"name": MIRROR_VERSION, "max_version_level": 1, "min_version_level": 1}
        ],
    }
    assert feature_fields(enabled, 4)["supported_features"] == [
        {"name": MIRROR_VERSION, "min_version": 0, "max_version": 1}
    ]


def test_api_versions_leaves_a_feature_at_level_0_out_of_the_finalized_list() -> None:
    disabled = FinalizedFeatures({MIRROR_VERSION: 0}, epoch=2)
    fields = feature_fields(disabled, 4)
    assert (fields["finalized_features"], fields["finalized_features_epoch"]) == ([], 2)


def test_feature_level_parsing_follows_kafka_features(capsys: pytest.CaptureFixture[str]) -> None:
    assert parse_feature_level(" mirror.version = 1") == (MIRROR_VERSION, 1)
    for text, problem in [
        ("mirror.version", "equals sign not found."),
        ("mirror.version=one", "unable to parse one as a short."),
        ("mirror.version=40000", "unable to parse 40000 as a short."),
    ]:
        with pytest.raises(SystemExit) as raised:
            parse_feature_level(text)
        assert raised.value.code == 1
        error = f"Error: Can't parse feature=level string {text}: {problem}\n"
        assert capsys.readouterr().err == error


def test_describe_and_outcome_lines_match_kafka_features() -> None:
    metadata = FeatureMetadata({}, 4, {MIRROR_VERSION: SupportedVersionRange(0, 1)})
    assert describe_lines(metadata) == [
        "Feature: mirror.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\t"
        "FinalizedVersionLevel: 0\tEpoch: 4"
    ]
    enabled = FeatureMetadata(
        {MIRROR_VERSION: FinalizedVersionRange(1, 1)},
        None,
        {MIRROR_VERSION: SupportedVersionRange(0, 1)},
    )
    assert describe_lines(enabled)[0].endswith("FinalizedVersionLevel: 1\tEpoch: -")
    updates = {MIRROR_VERSION: ClientFeatureUpdate(1)}
    refused = KafkaError(ErrorCode.INVALID_UPDATE_VERSION, "Invalid update version 1.")
    assert outcome_lines("upgrade", updates, Results({MIRROR_VERSION: None}), False) == [
        "mirror.version was upgraded to 1."
    ]
    assert outcome_lines("upgrade", updates, Results({MIRROR_VERSION: None}), True) == [
        "mirror.version can be upgraded to 1."
    ]
    assert outcome_lines("upgrade", updates, Results({MIRROR_VERSION: refused}), False) == [
        "Could not upgrade mirror.version to 1. Invalid update version 1."
    ]
    disabled = {MIRROR_VERSION: ClientFeatureUpdate(0, UpgradeType.SAFE_DOWNGRADE)}
    assert outcome_lines("disable", disabled, Results({MIRROR_VERSION: None}), False) == [
        "mirror.version was disabled."
    ]
    assert outcome_lines("disable", disabled, Results({MIRROR_VERSION: refused}), True) == [
        "Can not disable mirror.version. Invalid update version 1."
    ]
