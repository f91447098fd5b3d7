"""DescribeClientQuotas (48) and AlterClientQuotas (49) over the wire: quotas set through
one broker are described by another (they live in the metadata store), filters match as
Kafka's do (exact, default, any name; strict), removal drops an entity with no key left,
``validate_only`` stores nothing, and bad input gets Kafka's error per entity."""

from __future__ import annotations

from typing import Any

import pytest

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import (
    QuotaAlteration,
    QuotaFilterComponent,
    QuotaMatch,
    quota_entity,
)
from mirrorsim.protocol.errors import ErrorCode, KafkaError

ALICE = quota_entity(user="alice")
ALICE_APP = quota_entity(user="alice", client_id="app")
DEFAULT_USER = quota_entity(user=None)
APP = quota_entity(client_id="app")
DEFAULT_CLIENT = quota_entity(client_id=None)


async def test_quotas_set_on_one_broker_are_described_by_another(start_cluster: Any) -> None:
    cluster = await start_cluster(brokers=2)
    first, second = (b.bootstrap for b in cluster.brokers)
    async with Admin(bootstrap=first) as admin:
        outcome = await admin.alter_client_quotas(
            [
                QuotaAlteration(ALICE, {"producer_byte_rate": 1024, "request_percentage": 12.5}),
                QuotaAlteration(ALICE_APP, {"consumer_byte_rate": 2048}),
                QuotaAlteration(DEFAULT_USER, {"producer_byte_rate": 4096}),
                QuotaAlteration(APP, {"controller_mutation_rate": 0.5}),
                QuotaAlteration(DEFAULT_CLIENT, {"consumer_byte_rate": 8192}),
            ]
        )
        outcome.all()
    async with Admin(bootstrap=second) as admin:
        everything = await admin.describe_client_quotas()
        assert everything == {
            ALICE: {"producer_byte_rate": 1024.0, "request_percentage": 12.5},
            ALICE_APP: {"consumer_byte_rate": 2048.0},
            DEFAULT_USER: {"producer_byte_rate": 4096.0},
            APP: {"controller_mutation_rate": 0.5},
            DEFAULT_CLIENT: {"consumer_byte_rate": 8192.0},
        }
        alice = QuotaFilterComponent.of_entity("user", "alice")
        assert set(await admin.describe_client_quotas([alice])) == {ALICE, ALICE_APP}
        assert set(await admin.describe_client_quotas([alice], strict=True)) == {ALICE}
        default_user = QuotaFilterComponent.of_entity("user", None)
        assert set(await admin.describe_client_quotas([default_user])) == {DEFAULT_USER}
        any_client = QuotaFilterComponent("client-id", QuotaMatch.SPECIFIED)
        assert set(await admin.describe_client_quotas([any_client])) == {
            ALICE_APP,
            APP,
            DEFAULT_CLIENT,
        }
        assert set(await admin.describe_client_quotas([any_client, alice], strict=True)) == {
            ALICE_APP
        }

        removal = QuotaAlteration(ALICE_APP, {"consumer_byte_rate": None})
        (await admin.alter_client_quotas([removal])).all()
        partial = QuotaAlteration(ALICE, {"request_percentage": None})
        (await admin.alter_client_quotas([partial])).all()
        described = await admin.describe_client_quotas([alice])
        assert described == {ALICE: {"producer_byte_rate": 1024.0}}


async def test_validate_only_checks_and_stores_nothing(start_cluster: Any) -> None:
    cluster = await start_cluster()
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        good = QuotaAlteration(ALICE, {"producer_byte_rate": 1024})
        bad = QuotaAlteration(APP, {"producer_byte_rate": -1})
        outcome = await admin.alter_client_quotas([good, bad], validate_only=True)
        assert outcome[ALICE] is None
        assert _code(outcome[APP]) == ErrorCode.INVALID_REQUEST
        assert await admin.describe_client_quotas() == {}


@pytest.mark.parametrize(
    ("entity", "ops", "message"),
    [
        (quota_entity(user="alice"), {"no_such_key": 1.0}, "Invalid configuration key"),
        (quota_entity(user="alice"), {"producer_byte_rate": -5.0}, "must be greater than 0"),
        (quota_entity(user="alice"), {"producer_byte_rate": 0.0}, "must be greater than 0"),
        (quota_entity(user="alice"), {"producer_byte_rate": 10.5}, "fractional"),
        ((("group", "g"),), {"producer_byte_rate": 1.0}, "Unhandled client quota entity type"),
        ((), {"producer_byte_rate": 1.0}, "empty client quota entity"),
        (quota_entity(user=""), {"producer_byte_rate": 1.0}, "Empty user not supported"),
        ((("ip", "10.0.0.1"), ("user", "a")), {"connection_creation_rate": 1.0}, "IP entity"),
        ((("ip", "not-an-ip"),), {"connection_creation_rate": 1.0}, "not a valid IP"),
        ((("ip", "10.0.0.1"),), {"producer_byte_rate": 1.0}, "Invalid configuration key"),
    ],
)
async def test_bad_alterations_get_invalid_request(
    start_cluster: Any, entity: Any, ops: dict[str, float], message: str
) -> None:
    cluster = await start_cluster()
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        good = QuotaAlteration(quota_entity(client_id="ok"), {"producer_byte_rate": 1.0})
        outcome = await admin.alter_client_quotas([QuotaAlteration(entity, ops), good])
        error = outcome[tuple(sorted(entity))]
        assert _code(error) == ErrorCode.INVALID_REQUEST
        assert error is not None and message in str(error)
        assert outcome[quota_entity(client_id="ok")] is None
        assert await admin.describe_client_quotas() == {
            quota_entity(client_id="ok"): {"producer_byte_rate": 1.0}
        }


@pytest.mark.parametrize(
    ("components", "code"),
    [
        ([QuotaFilterComponent("group", QuotaMatch.SPECIFIED)], ErrorCode.UNSUPPORTED_VERSION),
        (
            [QuotaFilterComponent("user"), QuotaFilterComponent.of_entity("user", "a")],
            ErrorCode.INVALID_REQUEST,
        ),
        ([QuotaFilterComponent("ip"), QuotaFilterComponent("user")], ErrorCode.INVALID_REQUEST),
        ([QuotaFilterComponent("user", QuotaMatch.EXACT, None)], ErrorCode.INVALID_REQUEST),
    ],
)
async def test_bad_filters_fail_the_describe(
    start_cluster: Any, components: list[QuotaFilterComponent], code: ErrorCode
) -> None:
    cluster = await start_cluster()
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        with pytest.raises(KafkaError) as raised:
            await admin.describe_client_quotas(components)
    assert raised.value.code == code


def _code(error: KafkaError | None) -> ErrorCode | None:
    return None if error is None else ErrorCode(error.code)
