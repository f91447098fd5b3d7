"""Error codes: Kafka's numbering, retriable flags, and the mirror codes above them."""

from kio.schema.errors import ErrorCode as KioErrorCode

from mirrorsim.protocol.errors import (
    FIRST_MIRROR_CODE,
    HIGHEST_STANDARD_CODE,
    MIRROR_ERROR_CODES,
    ErrorCode,
    KafkaError,
    error_code_from_wire,
)

SPEC_MIRROR_CODES = [
    "MIRROR_AUTHORIZATION_FAILED",
    "READ_ONLY_TOPIC",
    "INVALID_MIRROR_NAME",
    "UNKNOWN_MIRROR",
    "TOPIC_ALREADY_IN_MIRROR",
    "TOPIC_NOT_IN_MIRROR",
    "MIRROR_TOPIC_ALREADY_PAUSED",
    "MIRROR_TOPIC_NOT_PAUSED",
    "MIRROR_TOPIC_BEING_REMOVED",
    "MIRROR_NOT_EMPTY",
]


def test_every_kafka_code_keeps_its_number_name_and_retriable_flag() -> None:
    for kio_code in KioErrorCode:
        ours = ErrorCode(kio_code.value)
        assert ours.name == kio_code.name.upper()
        assert ours.retriable == kio_code.retriable
        assert ours.message


def test_mirror_codes_are_consecutive_above_kafkas_highest() -> None:
    assert max(code.value for code in KioErrorCode) == HIGHEST_STANDARD_CODE
    numbers = [ErrorCode[name].value for name in SPEC_MIRROR_CODES]
    assert numbers == list(range(FIRST_MIRROR_CODE, FIRST_MIRROR_CODE + len(SPEC_MIRROR_CODES)))
    assert {ErrorCode[name] for name in SPEC_MIRROR_CODES} == MIRROR_ERROR_CODES


def test_kafka_error_carries_code_message_and_retriable() -> None:
    error = KafkaError(ErrorCode.READ_ONLY_TOPIC)
    assert error.code is ErrorCode.READ_ONLY_TOPIC
    assert error.message == ErrorCode.READ_ONLY_TOPIC.message
    assert not error.retriable
    assert str(error).startswith("READ_ONLY_TOPIC: ")
    assert KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, "moved").retriable
    assert KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, "moved").message == "moved"


def test_wire_values_map_to_codes_or_stay_ints() -> None:
    assert error_code_from_wire(137) is ErrorCode.UNKNOWN_MIRROR
    assert error_code_from_wire(-1) is ErrorCode.UNKNOWN_SERVER_ERROR
    assert error_code_from_wire(4000) == 4000
