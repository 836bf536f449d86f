"""Budget re-tuning: uniform rescale figures, zCDP optimum vs closed form, reallocation."""

import math
from fractions import Fraction

import pytest

from optimizer import search as S
from optimizer.census.allocation import load_builtin
from optimizer.census.pairs import MAIN_PAIR, dhc_persons_paths
from optimizer.search.proxy import _full_path_rho

# brentq brackets c to ~1e-14 relative, then c is stepped down ≤ ~1e-11: a few 1e-9 is generous.
C_TOL = 3e-9


@pytest.fixture(scope="module")
def alloc():
    return load_builtin("dhc-persons")


def test_target_bun_steinke_and_cks(alloc):
    assert S.target_from_allocation(alloc).epsilon.startswith("26.340588852722324")
    assert S.target_from_allocation(alloc, conversion="cks").epsilon.startswith("25.41928257654948476")
    with pytest.raises(ValueError):
        S.Target("1", "2")


def test_proxy_is_main_pair(alloc):
    p13 = dhc_persons_paths(alloc)[MAIN_PAIR[0] - 1]
    assert sorted(_full_path_rho(alloc)) == sorted(p13.rho)
    assert S.proxy_composition(alloc).rho == alloc.total_rho


@pytest.mark.parametrize(
    "conversion,c_star,drop",
    [
        ("bun-steinke", 1.1292560787, 11.446),
        ("cks", 1.0654109590, 6.1395),
    ],
)
def test_uniform_rescale(alloc, conversion, c_star, drop):
    target = S.target_from_allocation(alloc, conversion=conversion)
    c, scaled, d = S.uniform_rescale(alloc, target)
    assert isinstance(c, Fraction)
    assert abs(float(c) - c_star) < C_TOL
    assert abs((1 - 1 / float(c)) * 100 - drop) < 1e-3
    assert S.certified_ok(d, target)
    assert scaled == alloc.scaled(c)
    # maximal: a slightly larger factor breaks the target
    worse = S.proxy_delta(alloc.scaled(c * (1 + Fraction(1, 10**8))), target)
    assert not S.certified_ok(worse, target)
    assert math.isclose(S.variance_drop_percent(scaled, alloc), (1 - 1 / float(c)) * 100, rel_tol=1e-12)


def test_zcdp_optimum_closed_form(alloc):
    w = {(g, q): (10 if g == "Block" else 1) for g, q, _ in alloc.items()}
    z = S.zcdp_optimum(alloc, w)
    assert z.total_rho == alloc.total_rho  # the proposal grid keeps the total exactly
    R = float(alloc.total_rho)
    ssum = sum(math.sqrt(v) for v in w.values())
    for g, q, r in z.items():
        # on the proposal grid: every budget within 1 % of the closed form ρ_q = R·√w_q/Σ√w
        exact = R * math.sqrt(w[(g, q)]) / ssum
        assert abs(float(r) / exact - 1) < 1e-2
    # and the rounding costs at most ROUNDING_TOL of the objective, whose optimum is (Σ√w)²/R
    assert S.objective(z, w) <= ssum**2 / R * (1 + S.grid.ROUNDING_TOL)
    # same total zCDP -> the exact proxy delta is within the promise already
    target = S.target_from_allocation(alloc)
    assert S.certified_ok(S.proxy_delta(z, target), target)
    assert S.objective(z, w) < S.objective(alloc, w)


def test_reallocate_beats_uniform_on_nonuniform_weights(alloc):
    target = S.target_from_allocation(alloc)
    w = {(g, q): (10 if g == "Block" else 1) for g, q, _ in alloc.items()}
    c_u, uniform, _ = S.uniform_rescale(alloc, target)
    res = S.reallocate(alloc, target, w, n_trials=3, seed=1, uniform_c=c_u, progress=False)
    assert S.certified_ok(res.delta, target)
    assert res.objective < S.objective(uniform, w)
    assert res.variance_drop_percent > S.variance_drop_percent(uniform, alloc, w)
    assert res.n_trials_total == 3


@pytest.mark.slow  # ~26 s; resuming is also checked by test_cli_optimize and tests/test_resume.py
def test_reallocate_resumes(alloc, tmp_path):
    target = S.target_from_allocation(alloc)
    journal = tmp_path / "optuna.journal"
    kw = {
        "n_trials": 1,
        "seed": 3,
        "storage": str(journal),
        "scenario": "t",
        "progress": False,
        "uniform_c": Fraction(11292560787, 10**10),
    }
    r1 = S.reallocate(alloc, target, None, **kw)
    r2 = S.reallocate(alloc, target, None, **kw)
    assert r1.study_name == r2.study_name
    assert (r1.n_trials_total, r2.n_trials_total) == (1, 2)


def test_confirm_subset_recalibrates(alloc, tmp_path):
    from optimizer.jobs.confirm import confirm

    target = S.target_from_allocation(alloc)
    _, uniform, _ = S.uniform_rescale(alloc, target)
    lines: list[str] = []
    res = confirm(
        uniform, target, pairs=[(13, 13), (12, 13)], cache_dir=tmp_path, workers=1, progress=False, log=lines.append
    )
    assert res.passed and res.n_pairs == 2
    assert res.recalibration <= 1
    assert res.worst_delta.upper <= target.delta_fraction
    # issue 34 item 7: each further sweep says why it runs
    if res.rounds > 1:
        assert any(m.startswith("round 2: pair [") and "above the promise" in m for m in lines), lines
    else:
        assert not any(m.startswith("round 2") for m in lines)
