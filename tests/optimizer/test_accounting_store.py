"""Issue 33 item 3: the pipeline computes the proxy pair's accounting once, into the run
(``accounting.json``), on one ε grid; the report reads it back exactly and computes none."""

import ast
import itertools
import json
from fractions import Fraction
from pathlib import Path

import mpmath
import pytest

from accountant.decimals import exact_fraction
from optimizer.jobs.provenance import run_inputs
from optimizer.pipeline.accounting import Accounting, compute_accounting, eps_grid
from optimizer.pipeline.result import RunResult
from optimizer.pipeline.stages import _curves
from optimizer.scenario import load_scenario
from optimizer.search import target_from_allocation
from tests.toy_scenario import TOY_ALLOC, TOY_SCENARIO

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def toy_accounting(tmp_path_factory):
    d = tmp_path_factory.mktemp("acc")
    (d / "alloc.toml").write_text(TOY_ALLOC)
    (d / "toy.toml").write_text(TOY_SCENARIO)
    sc = load_scenario(d / "toy.toml")
    return sc, compute_accounting(sc)


def _same(a, b) -> bool:
    """Exactly equal numbers (binary floats, mpf and fractions compared as rationals)."""
    if isinstance(a, (bool, str)) or a is None:
        return a == b
    return exact_fraction(a) == exact_fraction(b)


def test_the_stored_accounting_reads_back_exactly(toy_accounting):
    sc, acc = toy_accounting
    doc = json.loads(json.dumps(acc.as_json()))  # through its file format
    back = Accounting.from_json(doc, sc, sc.load_allocation())
    assert back.total_rho == acc.total_rho and back.delta_target == acc.delta_target
    assert back.uniform_multiplier == acc.uniform_multiplier and back.tolerance == acc.tolerance
    assert _same(back.eps_claim, acc.eps_claim)
    for c, d in ((back.delta_exact, acc.delta_exact), (back.uniform_delta, acc.uniform_delta)):
        assert _same(c.lower, d.lower) and _same(c.upper, d.upper) and (c.tol, c.rtol) == (d.tol, d.rtol)
    e, f = back.eps_exact, acc.eps_exact
    assert _same(e.value, f.value) and _same(e.lower, f.lower) and e.tol == f.tol
    assert _same(e.delta_at_value.upper, f.delta_at_value.upper) and e.tolerance_met == f.tolerance_met
    assert len(back.curves) == len(acc.curves) > 0 and len(back.tradeoff) == len(acc.tradeoff) > 0
    for rows_b, rows_a in ((back.curves, acc.curves), (back.tradeoff, acc.tradeoff)):
        for rb, ra in zip(rows_b, rows_a):
            assert rb.keys() == ra.keys()
            assert all(_same(rb[k], ra[k]) for k in ra), rb


def test_a_number_that_is_not_binary_is_refused(toy_accounting):
    sc, acc = toy_accounting
    doc = acc.as_json()
    doc["eps_claim"] = "1/3"  # a rational that is not m·2^e
    with pytest.raises(ValueError, match="not a binary number"):
        Accounting.from_json(doc, sc, sc.load_allocation())


def test_the_one_grid_spans_a_fifth_to_six_fifths_of_the_promise_and_contains_it(toy_accounting):
    _, acc = toy_accounting
    grid = eps_grid(acc.eps_claim)
    assert [c["eps"] for c in acc.curves] == grid and len(grid) == 41
    eps = Fraction(mpmath.nstr(acc.eps_claim, 12))
    assert Fraction(grid[32]) == eps  # k = 40
    assert abs(Fraction(grid[0]) / eps - Fraction(1, 5)) < Fraction(1, 10**9)
    assert abs(Fraction(grid[-1]) / eps - Fraction(6, 5)) < Fraction(1, 10**9)
    assert all(Fraction(a) < Fraction(b) for a, b in itertools.pairwise(grid))


def test_the_run_curves_use_the_accounting_grid_and_its_baseline(toy_accounting):
    """The pipeline's curves.csv rows: the accounting's ε grid and baseline δ (computed once); the
    optimized allocation's δ computed anew on the same grid (here the baseline again: they agree)."""
    sc, acc = toy_accounting
    crow, trows = _curves(acc, sc.load_allocation())
    assert [r["epsilon_exact"] for r in crow] == [c["eps"] for c in acc.curves]
    for r, c in zip(crow, acc.curves):
        assert r["delta_baseline_exact"] == float(c["baseline_exact_delta_upper"])
        assert r["delta_optimized_exact"] == pytest.approx(r["delta_baseline_exact"], rel=1e-12)
    assert [r["curve"] for r in trows].count("baseline") == len(acc.tradeoff)
    assert {r["curve"] for r in trows} == {"baseline", "optimized"}


def test_a_run_seals_and_reads_back_its_accounting(tmp_path, toy_accounting):
    sc, acc = toy_accounting
    alloc = sc.load_allocation()
    target = target_from_allocation(alloc, delta="1e-10", conversion="bun-steinke")
    weights = {(g, q): Fraction(1) for g, q, _ in alloc.items()}
    inputs = run_inputs(scenario=None, alloc=alloc, target=target, weights=weights)
    RunResult({"scenario": "toy"}, accounting=acc.as_json(), inputs=inputs).write(tmp_path)
    summary = json.loads((tmp_path / "optimize.json").read_text(encoding="utf-8"))
    assert "accounting.json" in summary["outputs"]  # sealed with the other outputs
    back = RunResult.read(tmp_path)
    assert back is not None and back.accounting == json.loads(json.dumps(acc.as_json()))


def test_the_report_package_computes_no_accounting():
    """No module of optimizer/report/ calls the accountant or the pipeline's accounting."""
    banned = {"compute_accounting", "account", "Composition", "DiscreteGaussian", "uniform_rescale"}
    for path in sorted((ROOT / "optimizer" / "report").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                names = {a.name for a in node.names}
                assert not names & banned, f"{path.name} imports {names & banned} from {node.module}"
                assert node.module not in ("accountant.composition", "optimizer.search"), (path.name, node.module)
