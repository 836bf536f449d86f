"""Issue 16 (in part): the explorer's numbers come from the library, exactly, for exactly the
allocation the page names; bad input is refused naming the value, before any accounting."""

import math
from fractions import Fraction

import pytest

from accountant import Composition, DiscreteGaussian
from explorer.model import FACTOR_GRID, factor_from_slider, live, scaled_allocation
from optimizer.scenario import load_scenario
from optimizer.search import target_from_allocation


@pytest.fixture(scope="module")
def dhc():
    sc = load_scenario("dhc-persons")
    return sc, sc.load_allocation()


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "0.1", None, True, 1.5, -1.01])
def test_a_slider_value_that_is_not_a_number_in_range_is_refused(bad):
    with pytest.raises(ValueError, match="factor"):
        factor_from_slider(bad)


def test_factors_are_exact_on_the_grid():
    for v in (-1.0, -0.3, 0.0, 0.123, 1.0):
        f = factor_from_slider(v)
        assert f * FACTOR_GRID == int(f * FACTOR_GRID) and abs(float(f) - 10**v) <= 0.5 / FACTOR_GRID
    assert factor_from_slider(0.0) == 1


def test_unknown_geolevels_and_non_positive_factors_are_refused(dhc):
    _, alloc = dhc
    with pytest.raises(ValueError, match="unknown geolevel"):
        scaled_allocation(alloc, {"Planet": Fraction(2)})
    with pytest.raises(ValueError, match="positive Fraction"):
        scaled_allocation(alloc, {"Block": Fraction(0)})
    with pytest.raises(ValueError, match="positive Fraction"):
        scaled_allocation(alloc, {"Block": 1.5})


def test_the_live_delta_is_the_accountants_for_that_allocation(dhc):
    sc, alloc = dhc
    factors = {"Block": Fraction(3, 2), "US": Fraction(1, 2)}
    res = live(sc, alloc, factors)
    # independently: the full spine path (every geolevel once), each measurement twice, σ² = 1/ρ
    new = alloc.with_rho({(g, q): r * factors.get(g, 1) for g, q, r in alloc.items()})
    counts: dict[Fraction, int] = {}
    for _, _, r in new.items():
        counts[r] = counts.get(r, 0) + 2
    promise = target_from_allocation(alloc, delta="1e-10", conversion="bun-steinke")
    d = Composition({DiscreteGaussian(1 / r): n for r, n in counts.items()}).delta(
        promise.epsilon, tol=1e-35, rtol=1e-12
    )
    assert Fraction(res.delta_upper) >= Fraction(str(d.upper)) * (1 - Fraction(1, 10**11))
    assert Fraction(res.delta_lower) <= Fraction(str(d.lower)) * (1 + Fraction(1, 10**11))
    assert Fraction(res.delta_lower) <= Fraction(res.delta_upper)
    assert res.total_rho == str(new.total_rho) and res.kept_on_proxy
    block = next(r for r in res.noise_sd if r["geolevel"] == "Block")
    assert float(block["now"]) == pytest.approx(float(block["today"]) / math.sqrt(1.5), abs=0.01)


def test_the_badge_turns_when_the_budget_breaks_the_promise(dhc):
    sc, alloc = dhc
    res = live(sc, alloc, {g: Fraction(2) for g in alloc.geolevels})  # twice the budget everywhere
    assert not res.kept_on_proxy and Fraction(res.delta_lower) > Fraction(1, 10**10)


def test_explore_refuses_a_bad_port_or_scenario_in_one_line(capsys):
    from optimizer.cli.main import main

    assert main(["explore", "--port", "70000"]) == 2
    assert "--port" in capsys.readouterr().err
    assert main(["explore", "--scenario", "nosuch", "--port", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "nosuch" in err
