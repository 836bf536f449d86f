"""Issue 15: the published-variance model (GLS over a hierarchy of fan-outs) and its objective."""

from fractions import Fraction as F

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optimizer.census.allocation import Allocation, load_builtin
from optimizer.search import objectives as O
from optimizer.search import published_variance as PV

# --------------------------------------------------------------------------- dense GLS, written independently


def _solve(m: list[list[F]], b: list[F]) -> list[F]:
    """x with m x = b (Gauss-Jordan in exact fractions; m symmetric positive definite)."""
    n = len(b)
    a = [[*row, b[i]] for i, row in enumerate(m)]
    for col in range(n):
        piv = next(r for r in range(col, n) if a[r][col] != 0)
        a[col], a[piv] = a[piv], a[col]
        p = a[col][col]
        a[col] = [v / p for v in a[col]]
        for r in range(n):
            if r != col and a[r][col] != 0:
                f = a[r][col]
                a[r] = [v - f * w for v, w in zip(a[r], a[col])]
    return [a[i][n] for i in range(n)]


def dense_gls_variances(fan_outs: list[int], sigma2: list[F | None]) -> list[list[F]]:
    """Var of the GLS estimate of every node's count, per level, on the explicit tree.

    x = leaf counts; every node of a measured level ℓ is observed as (sum of its leaves) + noise of
    variance σ²_ℓ; the GLS estimator has covariance (AᵀΣ⁻¹A)⁻¹ and a node's published count is
    the sum of its leaves' estimates, so its variance is aᵀ(AᵀΣ⁻¹A)⁻¹a."""
    n_leaves = 1
    for c in fan_outs:
        n_leaves *= c
    levels: list[list[list[int]]] = []  # per level: per node the 0/1 leaf indicator
    width = n_leaves
    count = 1
    for i in range(len(fan_outs) + 1):
        levels.append([[int(j * width <= k < (j + 1) * width) for k in range(n_leaves)] for j in range(count)])
        if i < len(fan_outs):
            width //= fan_outs[i]
            count *= fan_outs[i]
    m = [[F(0)] * n_leaves for _ in range(n_leaves)]
    for nodes, s2 in zip(levels, sigma2):
        if s2 is None:
            continue
        for a in nodes:
            for i in range(n_leaves):
                if a[i]:
                    for j in range(n_leaves):
                        if a[j]:
                            m[i][j] += 1 / s2
    out = []
    for nodes in levels:
        out.append([sum((F(ai) * yi for ai, yi in zip(a, _solve(m, [F(v) for v in a]))), F(0)) for a in nodes])
    return out


@pytest.mark.parametrize(
    "fan_outs, sigma2",
    [
        ([3, 2], [F(2), F(5, 3), F(7)]),
        ([2, 3, 2], [F(1, 2), F(3), F(4, 5), F(9)]),
        ([2, 3, 2], [None, F(3), None, F(9)]),  # two levels not measured (top and third)
        ([3, 3], [F(1), None, F(2)]),
    ],
)
def test_recursion_equals_dense_gls_solve(fan_outs, sigma2):
    dense = dense_gls_variances(fan_outs, sigma2)
    v = PV.published_variances(sigma2, [F(c) for c in fan_outs])
    for level, (nodes, want) in enumerate(zip(dense, v)):
        assert all(x == want for x in nodes), (level, nodes, want)  # exact, every node of the level


def test_unmeasured_bottom_and_bad_inputs_are_clear_errors():
    with pytest.raises(ValueError, match="bottom geolevel is not measured"):
        PV.published_variances([F(1), None], [F(2)])
    with pytest.raises(ValueError, match="need 1 fan-outs"):
        PV.published_variances([F(1), F(1)], [])
    with pytest.raises(ValueError, match="fan-out must be >= 1"):
        PV.published_variances([F(1), F(1)], [F(1, 2)])
    # not measured: u_ℓ = c u_{ℓ+1}
    assert PV.bottom_up_variances([None, F(3)], [F(4)]) == (F(12), F(3))


_sig = st.fractions(min_value=F(1, 100), max_value=F(1000), max_denominator=1000)


@st.composite
def chains(draw):
    n = draw(st.integers(1, 5))
    fans = [F(draw(st.integers(2, 9)), draw(st.integers(1, 2))) for _ in range(n - 1)]
    s2 = [draw(st.one_of(st.none(), _sig)) for _ in range(n - 1)] + [draw(_sig)]
    return s2, fans


@settings(max_examples=60, deadline=None)
@given(chains(), st.data())
def test_published_variance_falls_when_any_noise_variance_falls(chain, data):
    s2, fans = chain
    v = PV.published_variances(s2, fans)
    for s, vl in zip(s2, v):
        if s is not None:
            assert vl <= s  # the GLS estimate is at least as good as the raw measurement
    k = data.draw(st.integers(0, len(s2) - 1))
    lower = data.draw(_sig)
    new = list(s2)
    if new[k] is None:
        new[k] = lower  # measuring a level that was not measured
    else:
        new[k] = new[k] * F(1, 2)
    w = PV.published_variances(new, fans)
    assert all(a <= b for a, b in zip(w, v))
    assert w[k] < v[k]  # all fan-outs > 1: the level's own published variance strictly falls
    t = F(3, 7)
    assert PV.published_variances([None if s is None else t * s for s in s2], fans) == tuple(t * x for x in v)


def test_variance_weights_reproduce_the_recursion():
    fans = [F(51), F(3143, 51), F(1)]
    s2 = [F(10), None, F(3), F(40)]
    u = PV.bottom_up_variances(s2, fans)
    beta = PV.variance_weights(fans)
    assert PV.published_variances(s2, fans) == tuple(sum(b * x for b, x in zip(row, u)) for row in beta)
    assert all(b >= 0 for row in beta for b in row)


# --------------------------------------------------------------------------- fan-outs


def test_shipped_2020_fan_outs():
    d = PV.DHC_FAN_OUTS_2020
    assert d.geolevels == (
        "US",
        "State",
        "County",
        "Prim",
        "Tract_Subset_Group",
        "Tract_Subset",
        "Block_Group",
        "Block",
    )
    assert d.fan_outs == (F(51), F(3143, 51), F(1), F(1), F(84414, 3143), F(239780, 84414), F(8132968, 239780))
    assert "Prim" in d.assumptions and "Tract_Subset_Group" in d.assumptions and "8,132,968" in d.source
    p = PV.PL94_FAN_OUTS_2020
    assert p.fan_out("US", "Block") == 8132968 and p.fan_out("County", "Tract") == F(84414, 3143)
    assert PV.default_fan_outs(load_builtin("dhc-persons")) is d
    assert PV.default_fan_outs(load_builtin("pl94-persons")) is p
    r = d.restrict(("US", "County", "Block"))
    assert r.fan_outs == (F(3143), F(8132968, 3143)) and r.assumptions == d.assumptions
    with pytest.raises(ValueError, match="topped by 'State'"):
        PV.default_fan_outs(load_builtin("dhc-persons-pr"))
    with pytest.raises(ValueError, match="no fan-out for geolevel"):
        d.restrict(("US", "Tract"))
    with pytest.raises(ValueError, match="not top-down"):
        d.restrict(("State", "US"))
    with pytest.raises(ValueError, match="must be >= 1"):
        PV.FanOuts(("A", "B"), (F(1, 2),), "test")
    with pytest.raises(ValueError, match="floats are not exact"):
        PV.FanOuts(("A", "B"), (2.5,), "test")


# --------------------------------------------------------------------------- allocations and the objective


def test_queries_map_by_name_and_an_unmeasured_level_is_handled():
    """P.L. 94-171 persons does not measure ``total`` at US: its chain has 1/σ² = 0 there."""
    a = load_builtin("pl94-persons")
    v = PV.allocation_published_variances(a)
    assert set(v) == {(g, q) for g, q, _ in a.items()} and ("US", "total") not in v
    s2 = [None] + [1 / a.rho_of(g, "total") for g in a.geolevels[1:]]
    want = PV.published_variances(s2, PV.PL94_FAN_OUTS_2020.fan_outs)
    assert [v[(g, "total")] for g in a.geolevels[1:]] == list(want[1:])
    # a query measured only above the bottom: its hierarchy ends at its lowest measurement
    b = Allocation.from_mapping(
        {"US": {"x": "1/10", "y": "1/10"}, "State": {"x": "1/5", "y": "1/5"}, "County": {"y": "1/20"}},
        run_type=None,
    )
    vb = PV.allocation_published_variances(b)
    assert vb[("State", "x")] == PV.published_variances([F(10), F(5)], [F(51)])[1]
    assert vb[("County", "y")] == PV.published_variances([F(10), F(5), F(20)], [F(51), F(3143, 51)])[2]


def test_objective_value_is_relative_and_scale_free():
    a = load_builtin("dhc-persons")
    w = {(g, q): F(1) for g, q, _ in a.items()}
    obj = O.get_objective("published-variance")
    assert obj.scale_free and obj.value(a, a, w) == 1 and obj.value(a.scaled(2), a, w) == F(1, 2)
    assert obj.drop_percent(a.scaled(4), a, w) == pytest.approx(75.0, abs=1e-12)
    with pytest.raises(ValueError, match=r"use Objective\.optimum"):
        obj.coefficients(a, w)
    flat = PV.FanOuts.from_counts(dict.fromkeys(a.geolevels, 1), "all fan-outs 1")
    # fan-out 1 everywhere: every level of a query is the same count, measured 8 times
    v = PV.allocation_published_variances(a, flat)
    q = "detailed"
    want = 1 / sum((a.rho_of(g, q) for g in a.geolevels), F(0))
    assert all(v[(g, q)] == want for g in a.geolevels)
    assert obj.with_fan_outs(flat).value(a.scaled(2), a, w) == F(1, 2)


@pytest.mark.parametrize("name", ["dhc-persons", "pl94-persons"])
def test_guarded_optimum_beats_the_uniform_rescale(name):
    """Under the Pareto guard no query is noisier, and the convex optimum's published-variance
    objective is ≤ the uniform rescale's at the same total (and ≤ the mean-relative-variance optimum's)."""
    a = load_builtin(name)
    w = {(g, q): F(1) for g, q, _ in a.items()}
    guard = O.ParetoGuard()
    obj = O.get_objective("published-variance")
    total = a.total_rho * F(11, 10)
    sol = obj.optimum(a, w, total, guard.lower_bounds(a))
    assert guard.holds(sol, a) and O.max_variance_ratio(sol, a) <= 1
    uniform = a.scaled(sol.total_rho / a.total_rho)
    assert obj.value(sol, a, w) <= obj.value(uniform, a, w)
    assert sol.total_rho <= total * (1 + F(1, 10**4))
    other = O.get_objective("mean-relative-variance").optimum(a, w, sol.total_rho, guard.lower_bounds(a))
    assert obj.value(sol, a, w) <= obj.value(other, a, w) * (1 + F(1, 10**5))


def test_calibrated_published_variance_optimum_keeps_guard_and_promise():
    from optimizer.search import target_from_allocation, uniform_rescale
    from optimizer.search.guarded import calibrated_optimum

    # Census-like noise (σ² of 250 … 1000), where each δ takes milliseconds; at σ² of 2.5 … 10 the
    # optimum's fine lattice costs 6–11 s per δ (100 s for this test; an accountant cost, issue 17)
    toy = Allocation.from_mapping(
        {"US": {"total": "1/1000", "age * sex": "1/500"}, "Block": {"total": "3/1000", "age * sex": "1/250"}},
        run_type=None,
    )
    target = target_from_allocation(toy, "1e-10")
    c_u, uniform, _ = uniform_rescale(toy, target)
    w = {(g, q): F(1) for g, q, _ in toy.items()}
    obj = O.get_objective("published-variance")
    res = calibrated_optimum(
        toy, target, None, toy.total_rho * c_u, O.ParetoGuard(), solve=lambda t, lo: obj.optimum(toy, w, t, lo)
    )
    assert res.c >= 1 and O.ParetoGuard().holds(res.allocation, toy)
    assert F(str(res.delta.upper)) <= target.delta_fraction
    assert obj.value(res.allocation, toy, w) <= obj.value(uniform, toy, w) * (1 + F(1, 10**6))


def test_per_geolevel_table():
    a = load_builtin("dhc-persons")
    rows = PV.published_variance_table(a.scaled(2), a)
    assert [r.geolevel for r in rows] == list(a.geolevels) and all(r.n_queries == 10 for r in rows)
    assert all(r.mean_after == r.mean_today / 2 and r.change_percent == -50 for r in rows)
    v = PV.allocation_published_variances(a)
    assert rows[-1].mean_today == sum((v[("Block", q)] for q in a.level("Block").queries), F(0)) / 10
    # the published Block variance is below the raw noise variance 1/ρ (GLS borrows from above)
    assert rows[-1].mean_today < 1 / a.rho_of("Block", "detailed")


# --------------------------------------------------------------------------- scenario key

SCEN = """name = "s"
allocation = "pl94-units"
conversion = "bun-steinke"
target_delta = "1e-10"
trials = 1
seed = 0
objective = "published-variance"
"""
FANS = """[fan_outs]
source = "a test"
assumptions = "Tract assumed"
counts = { US = "1", State = "51", County = "3143", Tract = "80000", Block_Group = "239780", Block = "8132968" }
"""


def test_scenario_fan_outs_key():
    from optimizer.scenario import ScenarioError, parse_scenario

    s = parse_scenario(SCEN + FANS)
    assert s.objective == "published-variance" and s.fan_outs.fan_outs[2] == F(80000, 3143)
    assert s.fan_outs.source == "a test" and s.as_dict()["fan_outs"]["assumptions"] == "Tract assumed"
    s.load_allocation()  # the geolevels match
    assert parse_scenario(SCEN).fan_outs is None and "fan_outs" not in parse_scenario(SCEN).as_dict()
    bad = {
        FANS.replace('source = "a test"\n', ""): r"line 8, key 'fan_outs.source': is required",
        FANS.replace(
            'Tract = "80000"', 'Tract = "1000"'
        ): r"line 11, key 'fan_outs.counts': FanOuts: fan-out County -> Tract must be >= 1",
        FANS.replace('Tract = "80000"', "Tract = 8.5"): r"key 'fan_outs.counts.Tract': must be an exact fraction",
        FANS + 'colour = "red"\n': r"key 'fan_outs.colour': unknown key",
        'fan_outs = "2020"\n': r"key 'fan_outs': must be a table",
    }
    for extra, pattern in bad.items():
        with pytest.raises(ScenarioError, match=pattern):
            parse_scenario(SCEN + extra)
    other = parse_scenario(SCEN.replace("pl94-units", "dhc-units") + FANS)
    with pytest.raises(ScenarioError, match=r"key 'fan_outs.counts': fan-outs: no fan-out for geolevel\(s\) \['Prim'"):
        other.load_allocation()


def test_pipeline_optimizes_published_variance_with_scenario_fan_outs(tmp_path):
    from optimizer.pipeline.stages import optimize, spec_for

    path = tmp_path / "s.toml"
    path.write_text(SCEN + FANS)
    spec = spec_for(scenario=str(path))
    assert spec.fan_outs is not None and spec.fan_outs.fan_outs[2] == F(80000, 3143)
    s = optimize(spec, tmp_path / "run", confirm=False).summary
    assert s["objective"] == "published-variance" and s["pareto_guard_met"] is True and s["n_queries_noisier"] == 0
    assert s["objective_drop_percent"] >= s["objective_uniform_drop_percent"] - 1e-9
