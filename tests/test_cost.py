"""The cost model against a round-number example worked out by hand."""

import numpy as np
import pytest

from planner.model.cost import (
    acquisition,
    advice,
    api_break_even_requests_per_s,
    api_usd,
    api_usd_per_month,
    break_even_month,
    capital_usd,
    cloud_usd_per_million_tokens,
    cloud_usd_per_month,
    cost_usd,
    energy_kwh_per_month,
    input_tokens_per_month,
    nodes_needed,
    opex_usd_per_month,
    output_tokens_per_month,
    owned_usd_per_million_tokens,
    owned_usd_per_month,
    rent_usd,
    tco_usd,
)

# 8 devices at 25,000 USD, 700 W, PUE 1.5, 0.10 USD/kWh, 36 months, 730 h per month, full power,
# no node overhead or hosting; renting at 2.00 USD per device-hour.


def test_capital_energy_tco_by_hand():
    nodes = nodes_needed(8, 8)
    assert nodes == 1
    capital = capital_usd(25_000, 8, 0, nodes)
    assert capital == 200_000
    # 700 W × 1.0 × 1.5 × 8 × 730 h = 6,132,000 Wh = 6,132 kWh
    energy = energy_kwh_per_month(700, 1.0, 1.5, 8, 730)
    assert energy == pytest.approx(6_132, rel=1e-12)
    opex = opex_usd_per_month(energy, 0.10, 0, nodes)
    assert opex == pytest.approx(613.20, rel=1e-12)
    tco = tco_usd(capital, opex, 36)
    assert tco == pytest.approx(200_000 + 36 * 613.20, rel=1e-12)  # 222,075.20
    assert owned_usd_per_month(tco, 36) == pytest.approx(222_075.20 / 36, rel=1e-12)


def test_node_overhead_and_hosting():
    # 12 devices need 2 nodes of 8: 12 × 25,000 + 2 × 40,000 capital; 2 × 1,500 hosting a month
    nodes = nodes_needed(12, 8)
    assert nodes == 2
    assert capital_usd(25_000, 12, 40_000, nodes) == 380_000
    assert opex_usd_per_month(1000, 0.10, 1_500, nodes) == pytest.approx(3_100, rel=1e-12)


def test_cloud_and_break_even_by_hand():
    cloud = cloud_usd_per_month(2.00, 8, 730)
    assert cloud == 11_680
    # saving per month 11,680 − 613.20 = 11,066.80; 200,000 / 11,066.80 = 18.07… → month 19
    assert break_even_month(200_000, cloud, 613.20) == 19
    # renting cheaper than running owned devices: never breaks even
    assert np.isnan(break_even_month(200_000, 500, 613.20))


def test_cost_per_million_tokens():
    # 2 requests/s × 500 tokens × 3600 s × 730 h = 2,628,000,000 tokens a month
    tokens = output_tokens_per_month(2, 500, 730)
    assert tokens == 2_628_000_000
    assert owned_usd_per_million_tokens(6_168.76, tokens) == pytest.approx(6_168.76 / 2_628)
    assert cloud_usd_per_million_tokens(11_680, tokens) == pytest.approx(11_680 / 2_628)


def test_missing_price_is_never_zero():
    assert np.isnan(capital_usd(np.nan, 8, 0, 1))
    assert np.isnan(tco_usd(np.nan, 613.2, 36))


# Owning the 8 devices: 222,075.20 USD over 36 months (above).
TCO = 222_075.20


@pytest.mark.parametrize(
    ("usd_per_hour", "rent", "advice", "cost"),
    [
        # 0.75 × 8 × 730 = 4,380 a month, 157,680 over 36 months: below owning, so rent
        (0.75, 157_680.0, "rent", 157_680.0),
        # 2.00 × 8 × 730 = 11,680 a month, 420,480 over 36 months: above owning, so buy
        (2.00, 420_480.0, "buy", TCO),
        # 222,075.20 ÷ 36 ÷ 730 ÷ 8 USD per device-hour rents for exactly the TCO: rent (no capital)
        (TCO / 36 / 730 / 8, TCO, "rent", TCO),
    ],
)
def test_buy_or_rent_by_hand(usd_per_hour, rent, advice, cost):
    renting = rent_usd(cloud_usd_per_month(usd_per_hour, 8, 730), 36)
    assert renting == pytest.approx(rent, rel=1e-12)
    assert acquisition(TCO, renting) == advice
    assert cost_usd(TCO, renting) == pytest.approx(cost, rel=1e-12)


def test_rent_pays_back_after_the_period():
    # renting at 0.75: the monthly saving of owning is 4,380 − 613.20 = 3,766.80, and 200,000 of
    # capital takes 53.1 months to recover: month 54, after the 36-month period
    assert break_even_month(200_000, 4_380, 613.20) == 54


def test_a_missing_price_leaves_the_other_way():
    assert acquisition(np.nan, 157_680.0) == "rent" and cost_usd(np.nan, 157_680.0) == 157_680.0
    assert acquisition(TCO, np.nan) == "buy" and cost_usd(TCO, np.nan) == TCO
    assert acquisition(np.nan, np.nan) == "" and np.isnan(cost_usd(np.nan, np.nan))


def test_api_by_hand():
    """2 requests/s of 1,000 prompt and 500 output tokens, at 0.20 and 0.60 USD per million."""
    tokens_in = input_tokens_per_month(2, 1_000, 730)
    assert tokens_in == 5_256_000_000  # 2 × 1,000 × 3,600 × 730
    tokens_out = output_tokens_per_month(2, 500, 730)
    monthly = api_usd_per_month(tokens_in, tokens_out, 0.20, 0.60, 1_500, np.nan)
    assert monthly == pytest.approx(5_256 * 0.20 + 2_628 * 0.60, rel=1e-12)  # 2,628.00
    total = api_usd(monthly, 36)
    assert total == pytest.approx(94_608, rel=1e-12)
    # cheaper than renting (157,680) and owning: the API wins up to 2 × 157,680 ÷ 94,608
    assert api_break_even_requests_per_s(2, 157_680.0, total) == pytest.approx(10 / 3, rel=1e-12)
    assert np.isnan(api_usd_per_month(tokens_in, tokens_out, np.nan, np.nan, 1_500, np.nan))
    # an API that accepts 8,192 tokens serves 1,500-token requests, not 10,000-token ones
    assert api_usd_per_month(tokens_in, tokens_out, 0.20, 0.60, 1_500, 8_192) == monthly
    assert np.isnan(api_usd_per_month(tokens_in, tokens_out, 0.20, 0.60, 10_000, 8_192))
    assert np.isnan(api_break_even_requests_per_s(2, 157_680.0, np.nan))


@pytest.mark.parametrize(
    ("acquired", "api", "cost", "expected"),
    [
        ("buy", 94_608.0, TCO, "API"),  # the API above (94,608) costs less than owning
        ("rent", 94_608.0, 157_680.0, "API"),  # ... and than renting at 0.75 USD an hour
        ("buy", 300_000.0, TCO, "buy"),  # a dearer API: the devices
        ("rent", np.nan, 157_680.0, "rent"),  # no API price: the devices
        ("", 94_608.0, np.nan, "API"),  # devices of unknown cost: the API
    ],
)
def test_advice_by_hand(acquired, api, cost, expected):
    assert advice(np.array([acquired], dtype=object), api, cost)[0] == expected
