"""Issue 33 item 2: one Tolerance type and the project's default accuracies in one place."""

import tokenize
from fractions import Fraction
from pathlib import Path

import pytest

from accountant import Composition, DiscreteGaussian, Tolerance
from accountant.tolerance import DELTA, SEARCH, TRADEOFF

ROOT = Path(__file__).resolve().parents[2]


def test_a_tolerance_is_validated_and_says_when_it_is_met():
    assert Tolerance(1e-35, 1e-20) == DELTA and TRADEOFF.absolute == 1e-25 and SEARCH.relative == 1e-10
    assert DELTA.met(1e-36, 1.0) and DELTA.met(1e-31, 1e-10) and not DELTA.met(1e-29, 1e-10)
    for bad in (0, 1, -1e-3, float("nan"), float("inf"), True, "1e-3"):
        with pytest.raises(ValueError, match="Tolerance: absolute"):
            Tolerance(bad, 1e-3)


def test_delta_takes_a_tolerance_for_both_errors():
    comp = Composition([DiscreteGaussian(Fraction(3, 2))] * 3)
    a = comp.delta(Fraction(1), tol=Tolerance(1e-30, 1e-12))
    b = comp.delta(Fraction(1), tol=1e-30, rtol=1e-12)
    assert (a.lower, a.upper) == (b.lower, b.upper) and a.tolerance_met


def test_the_default_accuracies_are_written_once():
    """No module of the packages restates 1e-35 / 1e-25 / 1e-20 as a bare number (prose and strings
    may name them; a named Tolerance of its own may use them): they come from accountant.tolerance."""
    offenders = []
    for pkg in ("accountant", "optimizer", "scenarios"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            if path.name == "tolerance.py":
                continue
            with path.open("rb") as fh:
                for tok in tokenize.tokenize(fh.readline):
                    if (
                        tok.type == tokenize.NUMBER
                        and tok.string.lower() in {"1e-35", "1e-25", "1e-20"}
                        and "Tolerance(" not in tok.line  # a named tolerance of its own
                    ):
                        offenders.append(f"{path.relative_to(ROOT)}:{tok.start[0]}: {tok.line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_a_promise_is_exact_and_parsed_by_to_fraction():
    """Issue 33 item 2 (one exact parser): a Target's δ goes through accountant.exact.to_fraction and a
    float δ is refused (its shortest decimal is not its value); ε may be a float (its exact value)."""
    from fractions import Fraction as F

    from optimizer.census.allocation import load_builtin
    from optimizer.search import Target, target_from_allocation

    with pytest.raises(TypeError, match="floats are not exact"):
        Target("26.34", 1e-10)
    with pytest.raises(TypeError, match="floats are not exact"):
        target_from_allocation(load_builtin("pl94-units"), delta=1e-10)
    with pytest.raises(ValueError, match="not a decimal or fraction string"):
        Target("26.34", "1e-100001")  # to_fraction's exponent limit, not a 10^100001 integer
    t = Target(0.5, "1/3")
    assert t.epsilon_fraction == F(1, 2) and t.delta_fraction == F(1, 3)
