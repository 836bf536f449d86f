"""Side effects of a reallocation at other δ: the exact δ at each point of the old zCDP curve.

A reallocation is calibrated at one promise (ε*, δ*). The production allocation's zCDP budget
ρ also promises, through its conversion, a whole curve ε_conv(ρ, δ) for every δ. At the other δ
of that curve the new allocation may be weaker than the old zCDP promise (its exact δ at
ε_conv(ρ, δ_k) above δ_k), even though it keeps (ε*, δ*) — issue 15 found δ = 3.3e-15 at
ε_BS(1e-15) for the uniform rescale of DHC persons. This module tabulates, on the proxy pair
[M13, M13] (the pair the optimizer calibrates on; :func:`optimizer.search.proxy_composition`),
for each δ_k of a grid: ε_k = conversion(ρ, δ_k) and each allocation's certified exact δ at
ε_k, with a flag where it exceeds δ_k.

Only the proxy pair is evaluated (a few ms per point); :func:`optimizer.jobs.confirm.confirm_curve`
is the all-pairs check of such a curve as a target. Exact curves: arXiv 2409.04194 (Su et al.);
the conversions: arXiv 1605.02065 (Bun–Steinke), arXiv 2004.00010 (Canonne–Kamath–Steinke).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from accountant.decimals import decimal_string
from accountant.tolerance import DELTA
from optimizer.census.allocation import Allocation
from optimizer.search import mpf_to_fraction, proxy_composition
from optimizer.search.curve_target import CurveTarget

__all__ = ["DELTA_GRID_RTOL", "DELTA_GRID_TOL", "delta_grid_rows", "weaker_points"]

#: absolute and relative error targets of each exact δ in the table
DELTA_GRID_TOL = DELTA.absolute
DELTA_GRID_RTOL = 1e-12


def delta_grid_rows(
    baseline: Allocation,
    allocations: Mapping[str, Allocation],
    conversion: str,
    deltas: Sequence[str] | None = None,
    *,
    tol: float = DELTA_GRID_TOL,
    rtol: float = DELTA_GRID_RTOL,
) -> list[dict[str, Any]]:
    """One row per δ_k of ``deltas`` (default 1e-1 … 1e-15): the zCDP promise of ``baseline``
    at δ_k and, for every ``{label: allocation}``, the proxy pair's exact δ at that ε.

    Row keys: ``delta_promised`` (δ_k), ``epsilon`` (ε_k = conversion(ρ_baseline, δ_k), 40 digits
    rounded down), then per label ``<label>_delta_lower`` / ``<label>_delta_upper`` (certified,
    decimal strings rounded outward), ``<label>_ratio`` (upper / δ_k, float) and
    ``<label>_weaker`` (the certified upper bound exceeds δ_k: the allocation does not keep this
    point of the old zCDP curve on the proxy pair), ``<label>_tolerance_met``.
    """
    curve = CurveTarget.from_allocation(baseline, deltas, conversion)
    eps = [pt.epsilon for pt in curve.points]
    # one engine batch per allocation (the δ_k share their nodes and tilts): 21.5 s instead of 30.6 s for
    # the 15 points of an optimized toy allocation, 0.03 s instead of 0.20 s for the demo's proposal
    columns = {label: proxy_composition(a).delta_curve(eps, tol=tol, rtol=rtol) for label, a in allocations.items()}
    rows: list[dict[str, Any]] = []
    for k, pt in enumerate(curve.points):
        row: dict[str, Any] = {"delta_promised": pt.delta, "epsilon": pt.epsilon}
        dk = Fraction(pt.delta)
        for label, column in columns.items():
            d = column[k]
            up, lo = mpf_to_fraction(d.upper), mpf_to_fraction(d.lower)
            row[f"{label}_delta_lower"] = decimal_string(lo, 12, "down")
            row[f"{label}_delta_upper"] = decimal_string(up, 12, "up")
            row[f"{label}_ratio"] = float(up / dk)
            row[f"{label}_weaker"] = up > dk
            row[f"{label}_tolerance_met"] = bool(getattr(d, "tolerance_met", True))
        rows.append(row)
    return rows


def weaker_points(rows: Sequence[Mapping[str, Any]], label: str) -> list[str]:
    """The δ_k (as written in ``rows``) at which allocation ``label`` is weaker than the old
    zCDP curve; accepts rows read back from CSV (``"True"``/``"False"`` strings)."""
    out = []
    for r in rows:
        v = r.get(f"{label}_weaker")
        if v is True or (isinstance(v, str) and v.strip().lower() == "true"):
            out.append(str(r["delta_promised"]))
    return out
