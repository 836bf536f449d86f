"""Issue 16 (in part): the explorer's numbers come from the library, exactly, for exactly the
allocation the page names; bad input is refused naming the value, before any accounting."""

import itertools
import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accountant import Composition, DiscreteGaussian
from explorer.export import write_scenario
from explorer.model import (
    FACTOR_GRID,
    FieldError,
    PagePromise,
    Setting,
    factor_from_slider,
    live,
    parse_factor,
)
from explorer.presets import optimize_from_here, static_presets, uniform_cut
from optimizer.scenario import load_scenario
from optimizer.search import target_from_allocation
from optimizer.search.objectives import OBJECTIVES, ParetoGuard


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
    with pytest.raises(FieldError, match="unknown geolevel"):
        Setting((("Planet", Fraction(2)),)).allocation(alloc)
    with pytest.raises(FieldError, match="unknown query 'nosuch'"):
        Setting(query=((("Block", "nosuch"), Fraction(2)),)).allocation(alloc)
    with pytest.raises(FieldError, match="positive Fraction"):
        Setting((("Block", Fraction(0)),))
    with pytest.raises(FieldError, match="positive Fraction"):
        Setting((("Block", 1.5),))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0", "budget of 0"),
        ("-1", "budget of below 0"),
        ("abc", "'abc' is not a number"),
        ("", "empty"),
        ("1/0", "is not a number"),
        ("nan", "is not a number"),
        ("1e9", "outside"),
    ],
)
def test_a_typed_factor_is_exact_or_refused_naming_the_field(text, message):
    with pytest.raises(FieldError, match=message) as err:
        parse_factor(text, "factor of County")
    assert err.value.field == "factor of County" and str(err.value).startswith("factor of County: ")
    assert parse_factor(" 3/2 ", "f") == Fraction(3, 2) and parse_factor("1.25", "f") == Fraction(5, 4)


@pytest.mark.parametrize(
    ("kind", "delta", "conversion", "field"),
    [
        ("point", "2", "bun-steinke", "δ"),
        ("point", "0", "bun-steinke", "δ"),
        ("point", "x", "bun-steinke", "δ"),
        ("point", "1e-200", "bun-steinke", "δ"),
        ("point", "1e-10", "nosuch", "conversion"),
        ("line", "1e-10", "cks", "target"),
    ],
)
def test_the_promise_fields_are_checked_before_any_accounting(kind, delta, conversion, field):
    with pytest.raises(FieldError) as err:
        PagePromise.parse(kind, delta, conversion)
    assert err.value.field == field


_factor = st.fractions(min_value=Fraction(1, 20), max_value=20).filter(lambda f: f > 0)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_a_setting_names_exactly_one_allocation_and_back(dhc, data):
    """Setting.from_allocation inverts Setting.allocation (exact), whatever the factors."""
    _, alloc = dhc
    keys = [(g, q) for g, q, _ in alloc.items()]
    geo = data.draw(st.dictionaries(st.sampled_from(alloc.geolevels), _factor, max_size=4))
    qry = data.draw(st.dictionaries(st.sampled_from(keys), _factor, max_size=6))
    s = Setting(tuple(sorted(geo.items())), tuple(sorted(qry.items())))
    new = s.allocation(alloc)
    for g, q, r in new.items():
        assert r == alloc.level(g).rho[alloc.level(g).queries.index(q)] * geo.get(g, 1) * qry.get((g, q), 1)
    back = Setting.from_allocation(alloc, new)
    assert list(back.allocation(alloc).items()) == list(new.items())
    assert Setting.from_json(back.as_json()) == back


def test_the_live_delta_is_the_accountants_for_that_allocation(dhc):
    sc, alloc = dhc
    factors = {"Block": Fraction(3, 2), "US": Fraction(1, 2)}
    detailed = ("Block", alloc.level("Block").queries[0])
    setting = Setting(tuple(sorted(factors.items())), ((detailed, Fraction(7, 5)),))
    res = live(sc, alloc, setting)
    # independently: the full spine path (every geolevel once), each measurement twice, σ² = 1/ρ
    new = alloc.with_rho(
        {(g, q): r * factors.get(g, 1) * (Fraction(7, 5) if (g, q) == detailed else 1) for g, q, r in alloc.items()}
    )
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
    us = next(r for r in res.noise_sd if r["geolevel"] == "US")
    assert float(us["now"]) == pytest.approx(float(us["today"]) * math.sqrt(2), abs=0.01)
    assert res.query_factors == {f"Block/{detailed[1]}": "7/5"}
    # a kept result is for exactly these inputs: the same numbers, no accounting; another promise is new
    again = live(sc, alloc, setting)
    assert again.seconds == 0 and again.delta_upper == res.delta_upper and again.epsilon_safe == res.epsilon_safe
    other = live(sc, alloc, setting, PagePromise.parse("point", "1e-12", "bun-steinke"))
    assert other.seconds > 0 and other.promised_delta == "1e-12"
    # the trade-off curve: decreasing β(α) below 1 − α
    trade = res.tradeoff  # (computed in the live batch, to TRADEOFF_TOL)
    a, b = trade["alpha"], trade["beta"]
    order = sorted(range(len(a)), key=a.__getitem__)
    assert all(b[i] >= b[j] - 1e-15 for i, j in itertools.pairwise(order))
    assert all(b[i] <= 1 - a[i] + 1e-15 for i in range(len(a)))


def test_the_badge_turns_when_the_budget_breaks_the_promise(dhc):
    sc, alloc = dhc
    res = live(sc, alloc, Setting(tuple((g, Fraction(2)) for g in sorted(alloc.geolevels))))  # twice the budget
    assert not res.kept_on_proxy and Fraction(res.delta_lower) > Fraction(1, 10**10)


def test_a_curve_promise_is_kept_only_when_every_point_is(dhc):
    """The curve: one row per promised δ, each exact δ against its own ε; the uniform cut at 1e-10 breaks
    a point further down the curve (the reason the curve target exists)."""
    sc, alloc = dhc
    curve = PagePromise.parse("curve", "1e-10", "bun-steinke")
    base = live(sc, alloc, Setting(), curve)
    assert base.kept_on_proxy and len(base.points) == 15 and all(p["kept"] for p in base.points)
    point = PagePromise.parse("point", "1e-10", "bun-steinke")
    cut, _ = uniform_cut(alloc, point.points(alloc))
    res = live(sc, alloc, Setting.from_allocation(alloc, cut), curve)
    broken = [p["delta"] for p in res.points if not p["kept"]]
    assert not res.kept_on_proxy and broken and "1e-10" not in broken
    assert res.promised_delta in broken  # the headline point is the most binding one


def test_presets_name_where_they_come_from(dhc, tmp_path):
    sc, alloc = dhc
    (p,) = static_presets(sc, alloc)
    assert p.label.startswith("production: the Bureau's dhc-persons")
    from tests.toy_scenario import TOY_ALLOC, TOY_SCENARIO

    (tmp_path / "alloc.toml").write_text(TOY_ALLOC)
    (tmp_path / "toy.toml").write_text(TOY_SCENARIO)
    toy = load_scenario(tmp_path / "toy.toml")
    (own,) = static_presets(toy, toy.load_allocation())
    assert "not the Bureau's" in own.label and "production" not in own.label


@pytest.mark.parametrize("objective", sorted(set(OBJECTIVES) - {"published-variance"}))
def test_optimize_from_here_keeps_the_promise_with_no_query_noisier_than_here(dhc, objective):
    sc, alloc = dhc
    here = alloc.with_rho({(g, q): r * (Fraction(1, 2) if g == "US" else 1) for g, q, r in alloc.items()})
    promise = target_from_allocation(alloc, delta="1e-10", conversion="bun-steinke")
    new, text = optimize_from_here(sc, here, [promise], objective)
    assert ParetoGuard().holds(new, here) and new.total_rho > here.total_rho
    counts: dict[Fraction, int] = {}
    for _, _, r in new.items():
        counts[r] = counts.get(r, 0) + 2
    d = Composition({DiscreteGaussian(1 / r): n for r, n in counts.items()}).delta(
        promise.epsilon, tol=1e-35, rtol=1e-12
    )
    # the optimizer certified δ ≤ promise; this recomputation's upper end is within rtol 1e-12 of the truth
    assert Fraction(str(d.lower)) <= promise.delta_fraction
    assert Fraction(str(d.upper)) <= promise.delta_fraction * (1 + Fraction(1, 10**12))
    assert objective in text


def test_export_writes_a_scenario_that_loads_back_to_the_setting(dhc, tmp_path):
    sc, alloc = dhc
    setting = Setting((("County", Fraction(3, 2)),), ((("Block", alloc.level("Block").queries[0]), Fraction(6, 5)),))
    promise = PagePromise.parse("curve", "1e-12", "cks")
    ex = write_scenario(tmp_path, "dhc-explored", sc, setting.allocation(alloc), promise, "sum-variance")
    back = load_scenario(ex.scenario)
    assert list(back.load_allocation().items()) == list(setting.allocation(alloc).items())
    assert (back.target_kind, back.target_delta_text, back.conversion, back.objective) == (
        "curve",
        "1e-12",
        "cks",
        "sum-variance",
    )
    assert back.curve_deltas == promise.curve_deltas and back.pareto == sc.pareto
    with pytest.raises(ValueError, match="export name"):
        write_scenario(tmp_path, "../escape", sc, alloc, promise, "sum-variance")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dhc-explored-allocation.toml", "dhc-explored.toml"]


def test_explore_refuses_a_bad_port_or_scenario_in_one_line(capsys):
    from optimizer.cli.main import main

    assert main(["explore", "--port", "70000"]) == 2
    assert "--port" in capsys.readouterr().err
    assert main(["explore", "--scenario", "nosuch", "--port", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "nosuch" in err


def test_the_live_epsilon_is_the_accountants_own_search(dhc):
    """The live ε starts from the δ curve the page has just computed (a hint the accountant checks from
    the tails it holds): it equals the unhinted search's safe ε to the digits shown, the curve brackets
    it, and the hinted search integrates at most two more times."""
    from accountant.decimals import decimal_string
    from explorer.model import epsilon_hints
    from optimizer.search import proxy_composition
    from optimizer.search.proxy import mpf_to_fraction
    from tests.accountant.batches import counted_batches

    sc, alloc = dhc
    setting = Setting((("County", Fraction(6, 5)), ("US", Fraction(4, 5))), ())
    res = live(sc, alloc, setting)
    promise = target_from_allocation(alloc, delta="1e-10", conversion="bun-steinke")
    comp = proxy_composition(setting.allocation(alloc))
    plain = comp.epsilon("1e-10", tol=1e-12)
    assert res.epsilon_safe == decimal_string(mpf_to_fraction(plain.value), 12, "up", notation="auto")
    grid = [Fraction(promise.epsilon) * Fraction(5 + k, 10) for k in range(11)]
    hints = epsilon_hints([Fraction(promise.epsilon)], grid)
    assert hints is not None and hints[0] < mpf_to_fraction(plain.value) <= hints[-1]
    assert epsilon_hints(grid[:1]) is None and epsilon_hints([Fraction(0), grid[0]]) is None
    fresh = proxy_composition(setting.allocation(alloc))
    fresh.delta_curve(hints, tol=1e-35, rtol=1e-12)
    calls = counted_batches(fresh)
    hinted = fresh.epsilon("1e-10", tol=1e-12, near=hints)
    assert max(hinted.lower, plain.lower) < min(hinted.value, plain.value)  # both hold the root
    assert len(calls) <= 2, calls


def test_a_move_costs_one_engine_batch(dhc, monkeypatch):
    """The live numbers of a new setting — δ at the promise, the δ curve, the trade-off curve and the safe ε
    — come from one engine batch: the ε search ends in closed form from the tails at the surrogate's
    estimate, which rides in that batch (two more batches at most when it does not)."""
    from accountant import composition as C

    sc, alloc = dhc
    calls: list = []
    real = C.Composition._delta_curve

    def counted(self, *a, **k):
        calls.append(a[0])
        return real(self, *a, **k)

    monkeypatch.setattr(C.Composition, "_delta_curve", counted)
    res = live(sc, alloc, Setting((("State", Fraction(8, 5)),), ()))
    assert res.seconds > 0 and len(calls) == 1, calls
    assert len(res.tradeoff["alpha"]) == len(res.tradeoff["beta"]) > 10
