"""Stage 1: the largest exact factor c of a shape's budgets whose certified proxy δ(ε) meets the
target (brentq on log δ(c) − log δ, then a step down to the certified safe side); the uniform
rescale is its special case.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import mpmath

from optimizer.census.allocation import Allocation
from optimizer.search.proxy import _apply, _composition, _full_path_rho, mpf_to_fraction
from optimizer.search.target import RTOL_FINAL, RTOL_SEARCH, TOL_FINAL, TOL_SEARCH, Target

#: Relative bracket tolerance on c for brentq (final: ~1e-14; search: 1e-10).
XTOL_FINAL, XTOL_SEARCH = 1e-14, 1e-10
#: Largest denominator of the exact factor c (limit_denominator), and the relative step by
#: which c is lowered until the certified δ.upper ≤ target.
C_MAX_DENOMINATOR = 10**12
C_STEP = 1e-12


@dataclass(frozen=True)
class Calibration:
    """Result of calibrating a shape: exact factor ``c``, the scaled allocation, certified δ."""

    c: Fraction
    allocation: Allocation
    delta: Any  # accountant.Certified
    evaluations: int
    seconds: float


def _calibrate_rhos(
    rhos: Sequence[Fraction],
    target: Target,
    *,
    hint: float = 1.0,
    slope: float | None = None,
    xtol: float = XTOL_FINAL,
    tol: float = TOL_FINAL,
    rtol: float = RTOL_FINAL,
    builder: Callable[[Sequence[Fraction]], Any] | None = None,
):
    """Largest exact c with certified δ(ε; ρ·c).upper ≤ δ for the composition ``builder(ρ·c)``
    (default: the proxy's, :func:`~optimizer.search.proxy._composition`).

    Returns ``(c, certified δ at c, number of δ evaluations)``.
    """
    from scipy.optimize import brentq  # noqa: PLC0415 - 0.7 s to import; only the root finder needs it

    log_target = math.log(target.delta_fraction)
    n_eval = 0
    cache: dict[float, float] = {}

    def delta_at(c: Fraction, t=tol, r=rtol):
        nonlocal n_eval
        n_eval += 1
        return (builder or _composition)([x * c for x in rhos]).delta(target.epsilon, tol=t, rtol=r)

    def f(c: float) -> float:
        if c not in cache:
            cache[c] = float(mpmath.log(delta_at(Fraction(c)).upper)) - log_target
        return cache[c]

    # bracket: a Newton step in log c with the expected slope d log δ / d log c, then widen
    s = slope if slope and slope > 0 else 30.0
    a = float(hint)
    fa = f(a)
    b = a * math.exp(-fa / s)
    if b == a:
        b = a * (1 + 10 * xtol) if fa < 0 else a * (1 - 10 * xtol)
    fb = f(b)
    k = 0
    while fa * fb > 0:
        k += 1
        if k > 60:
            raise RuntimeError("calibrate: could not bracket the root of log δ(c) = log δ_target")
        step = 2.0 * abs(math.log(b / a))
        a, fa = b, fb
        b = a * math.exp(step if fa < 0 else -step)
        fb = f(b)
    lo, hi = (a, b) if a < b else (b, a)
    root = brentq(f, lo, hi, xtol=xtol * hi, rtol=4 * sys.float_info.epsilon, maxiter=200)
    # exact factor on the safe side
    c = Fraction(root).limit_denominator(C_MAX_DENOMINATOR)
    k = 0
    while True:
        d = delta_at(c)
        if mpf_to_fraction(d.upper) <= target.delta_fraction:
            return c, d, n_eval
        k += 1
        if k > 200:
            raise RuntimeError("calibrate: could not reach the certified safe side")
        c = Fraction(root * (1 - C_STEP * 2**k)).limit_denominator(C_MAX_DENOMINATOR)


def calibrate_shape(
    shape: Allocation,
    target: Target,
    *,
    hint: float | None = None,
    slope: float | None = None,
    final: bool = True,
) -> Calibration:
    """Stage-1 root-finding for any shape: the largest c (exact fraction, to brentq's ``xtol``)
    with certified proxy δ(ρ·c) ≤ target.

    Args:
        shape: the allocation whose budgets are scaled together.
        hint: starting guess for c (default: 1).
        slope: expected d log δ / d log c near the root (speeds up bracketing).
        final: certify with the final tolerances (``False``: search tolerances and a
            looser bracket; the returned δ is still a certified bound at the returned c).
    """
    t0 = time.perf_counter()
    rhos = _full_path_rho(shape)
    c, d, n = _calibrate_rhos(
        rhos,
        target,
        hint=hint or 1.0,
        slope=slope,
        xtol=XTOL_FINAL if final else XTOL_SEARCH,
        tol=TOL_FINAL if final else TOL_SEARCH,
        rtol=RTOL_FINAL if final else RTOL_SEARCH,
    )
    scaled = _apply(shape, [r * c for r in rhos])
    scaled = Allocation(scaled.levels, shape.name, _note(shape.provenance, f"calibrated: rho x {c}"), shape.run_type)
    return Calibration(c, scaled, d, n, time.perf_counter() - t0)


def _note(provenance: str, note: str) -> str:
    return f"{provenance}; {note}" if provenance else note


def uniform_rescale(alloc: Allocation, target: Target) -> tuple[Fraction, Allocation, Any]:
    """Stage 1: the largest c (an exact fraction, to brentq's ``xtol``) with certified proxy δ(target ε) ≤ target δ.

    ρ_q → c·ρ_q for every measurement (σ_q² → σ_q²/c); variance drop (1 − 1/c)·100 %.

    Returns:
        ``(c, alloc.scaled(c), certified δ of the proxy at c)``.
    """
    cal = calibrate_shape(alloc, target, hint=1.1)
    return cal.c, alloc.scaled(cal.c), cal.delta
