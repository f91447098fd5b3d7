"""Kafka's quota arithmetic on a simulated clock: the sampled rate, the throttle time of a
violation, and the precedence that picks the quota for a (user, client-id)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mirrorsim.broker.quotas.manager import Client, ClientQuotas
from mirrorsim.broker.quotas.precedence import QuotaId, resolve
from mirrorsim.broker.quotas.rate import QuotaSensor, Rate, WindowConfig, throttle_time_ms

DEFAULTS = WindowConfig(samples=11, window_ms=1000)


def test_throttle_time_brings_the_rate_back_to_the_bound() -> None:
    # O * W / (W + X) = T  with O = 3000/s, T = 1000/s, W = 1 s: X = 2 s
    assert throttle_time_ms(3000.0, 1000.0, 1000) == 2000
    assert throttle_time_ms(999.0, 1000.0, 1000) == 0


def test_the_first_window_counts_as_one_window_then_the_window_is_padded() -> None:
    rate = Rate(DEFAULTS)
    rate.record(500.0, 0)
    assert rate.window_size_ms(400) == 1000
    assert rate.measure(400) == 500.0
    rate.record(500.0, 1500)
    # the second window has started: the elapsed 1.5 s is padded to 10 whole windows
    assert rate.window_size_ms(1500) == 10_500
    assert rate.measure(1500) == 1000 / 10.5


def test_samples_without_events_for_the_whole_window_are_forgotten() -> None:
    rate = Rate(DEFAULTS)
    rate.record(10_000.0, 0)
    rate.record(1.0, 1000)
    assert rate.measure(11_999) > 0
    rate.record(1.0, 12_000)
    assert rate.measure(12_000) < 1.0


@settings(max_examples=25, deadline=None)
@given(
    bound=st.integers(min_value=10_000, max_value=5_000_000),
    request_fraction=st.floats(min_value=0.02, max_value=0.2),
    gap_ms=st.integers(min_value=0, max_value=9),
)
def test_a_client_that_waits_out_its_throttle_times_converges_on_the_bound(
    bound: int, request_fraction: float, gap_ms: int
) -> None:
    """Over two minutes, a client sending as fast as it is let through achieves the quota
    within 15 %, whatever its request size (a fraction of one second's quota). Unthrottled,
    the client would send at least twice its quota."""
    sensor = QuotaSensor(Rate(DEFAULTS), float(bound))
    size = bound * request_fraction
    now, sent = 0, 0.0
    horizon_ms = 120_000
    while now < horizon_ms:
        sent += size
        now += sensor.record_and_throttle_ms(size, now) + gap_ms + 1
    achieved = sent / (now / 1000)
    assert abs(achieved - bound) / bound < 0.15


def test_precedence_picks_the_most_specific_quota_and_its_quota_id() -> None:
    quotas = {
        (("client-id", None),): {"producer_byte_rate": 1.0},
        (("client-id", "app"),): {"producer_byte_rate": 2.0},
        (("user", None),): {"producer_byte_rate": 3.0},
        (("client-id", "app"), ("user", None)): {"producer_byte_rate": 4.0},
        (("user", "alice"),): {"producer_byte_rate": 5.0},
        (("client-id", None), ("user", "alice")): {"producer_byte_rate": 6.0},
        (("client-id", "app"), ("user", "alice")): {"producer_byte_rate": 7.0},
    }
    order = [
        ((("client-id", "app"), ("user", "alice")), 7.0, QuotaId("alice", "app")),
        ((("client-id", None), ("user", "alice")), 6.0, QuotaId("alice", "app")),
        ((("user", "alice"),), 5.0, QuotaId("alice", "")),
        ((("client-id", "app"), ("user", None)), 4.0, QuotaId("alice", "app")),
        ((("user", None),), 3.0, QuotaId("alice", "")),
        ((("client-id", "app"),), 2.0, QuotaId("", "app")),
        ((("client-id", None),), 1.0, QuotaId("", "app")),
    ]
    remaining = dict(quotas)
    for entity, bound, quota_id in order:
        applied = resolve(remaining, "producer_byte_rate", "alice", "app")
        assert applied is not None
        assert (applied.bound, applied.quota_id) == (bound, quota_id)
        del remaining[entity]
    assert resolve(remaining, "producer_byte_rate", "alice", "app") is None
    assert resolve(quotas, "consumer_byte_rate", "alice", "app") is None
    # without a client id only the user levels apply
    no_client = resolve(quotas, "producer_byte_rate", "alice", "")
    assert no_client is not None and (no_client.bound, no_client.quota_id) == (
        5.0,
        QuotaId("alice", ""),
    )


def test_clients_of_one_user_quota_share_one_rate() -> None:
    now = [0]
    manager = ClientQuotas(DEFAULTS, clock=lambda: now[0])
    manager.update({(("user", "alice"),): {"producer_byte_rate": 1000.0}})
    assert manager.throttle_ms("producer_byte_rate", Client("alice", "one"), 900) == 0
    assert manager.throttle_ms("producer_byte_rate", Client("alice", "two"), 900) == 800
    assert manager.throttle_ms("producer_byte_rate", Client("bob", "one"), 5000) == 0
    assert Client.of("User:alice", None) == Client("alice", "")


def test_sensors_idle_for_an_hour_are_dropped() -> None:
    now = [0]
    manager = ClientQuotas(DEFAULTS, clock=lambda: now[0])
    quotas = {(("client-id", None),): {"producer_byte_rate": 1000.0}}
    manager.update(quotas)
    manager.throttle_ms("producer_byte_rate", Client("u", "gone"), 10)
    now[0] = 1_800_000
    manager.throttle_ms("producer_byte_rate", Client("u", "kept"), 10)
    now[0] = 3_600_001
    manager.update(quotas)
    assert manager.sensor_count == 1
