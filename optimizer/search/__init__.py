"""Same promised guarantee, less noise: re-tuning a budget allocation by exact accounting.

The promise is the Census's published (ε, δ): ε is the zCDP conversion (Bun–Steinke by
default, or Canonne–Kamath–Steinke) of the baseline's total ρ at δ (default 1e-10).  The
exact, certified δ(ε) of the release is far below δ, so the budgets can grow — the noise
variances shrink — until the exact δ(ε) just meets the promise.  Three stages:

1. :func:`uniform_rescale` — every ρ_q × c (every σ_q² × 1/c), the largest exact ``Fraction``
   c whose certified proxy δ(ε).upper ≤ δ; SciPy ``brentq`` on log δ(c) − log δ, then a
   step down to the certified safe side.
2. :func:`zcdp_optimum` — the shape minimising the weighted variance at the *same total* ρ
   (cvxpy/Clarabel; closed form ρ_q ∝ √w_q), converted to exact fractions; then stage-1
   calibration of that shape ("zCDP-optimum shape + exact accounting").
3. :func:`reallocate` — an Optuna TPE search over per-geolevel and per-query log-multipliers of
   the shape; every trial's shape is calibrated by stage 1 so it meets the target exactly.

**Proxy.**  The search accounts the representative pair [M_13, M_13] (:func:`proxy_composition`:
the full spine path — every geolevel present — composed with itself); :mod:`optimizer.jobs.confirm`
then checks all 946 pairs of the allocation's 43 paths and recalibrates if one exceeds δ.

**Objective (weighted variance).**  For an allocation with nominal per-query budgets ρ_q
(one per (geolevel, query) measurement, *before* any spine bypass merging), the noise of that
measurement in every geounit is a discrete Gaussian with variance σ_q² = 1/ρ_q (Census
convention), and ::

    objective(alloc, w) = Σ_q w_q · σ_q² = Σ_q w_q / ρ_q        (w_q > 0; default w_q = 1)

A scenario's weight of a measurement is geolevel weight × query weight.  The **variance drop**
of a new allocation against the baseline is ``100 · (1 − objective(new) / objective(baseline))``
percent; for a uniform rescale by c it equals (1 − 1/c)·100 whatever the weights.

Finding recorded while building this (see ``bench/optimizer.py``): at a fixed total ρ the exact
δ(ε) of the proxy hardly depends on the shape (relative changes ~1e-5 — the composition of 160
discrete Gaussians is nearly Gaussian with μ² = 2ρ), so the calibrated total ρ is nearly shape
independent and the zCDP-optimum shape with exact calibration is within ~1e-5 of the best the
exact search can find.  Evaluation time, in contrast, does depend on the shape: few distinct,
commensurate budgets (the Census shapes, the equal-weight optimum) take 2–30 ms per δ; 80
unrelated budgets take 0.2–1.2 s.

The package, one stage per module: :mod:`~optimizer.search.target` (the promise and the
tolerances), :mod:`~optimizer.search.proxy`, :mod:`~optimizer.search.variance` (the objective),
:mod:`~optimizer.search.calibrate` (stage 1), :mod:`~optimizer.search.convex` (stage 2) and
:mod:`~optimizer.search.study` (stage 3).
"""

from optimizer.search.calibrate import (
    C_MAX_DENOMINATOR,
    C_STEP,
    XTOL_FINAL,
    XTOL_SEARCH,
    Calibration,
    calibrate_shape,
    uniform_rescale,
)
from optimizer.search.convex import SolverWarning, zcdp_optimum
from optimizer.search.grid import GRID_SIZES, Grid, grid_shape
from optimizer.search.proxy import certified_ok, mpf_to_fraction, proxy_composition, proxy_delta
from optimizer.search.study import SearchResult, StudyLockedError, config_hash, reallocate, resolve_storage, study_lock
from optimizer.search.target import (
    EPS_DIGITS,
    RTOL_FINAL,
    RTOL_SEARCH,
    TOL_FINAL,
    TOL_SEARCH,
    Target,
    target_from_allocation,
    zcdp_claim_delta,
)
from optimizer.search.variance import equal_weights, objective, variance_drop_percent
from optimizer.search.watch import WATCH_PATHS, keep_watched, screen_diagonal

__all__ = [
    "C_MAX_DENOMINATOR",
    "C_STEP",
    "EPS_DIGITS",
    "GRID_SIZES",
    "RTOL_FINAL",
    "RTOL_SEARCH",
    "TOL_FINAL",
    "TOL_SEARCH",
    "WATCH_PATHS",
    "XTOL_FINAL",
    "XTOL_SEARCH",
    "Calibration",
    "Grid",
    "SearchResult",
    "SolverWarning",
    "StudyLockedError",
    "Target",
    "calibrate_shape",
    "certified_ok",
    "config_hash",
    "equal_weights",
    "grid_shape",
    "keep_watched",
    "mpf_to_fraction",
    "objective",
    "proxy_composition",
    "proxy_delta",
    "reallocate",
    "resolve_storage",
    "screen_diagonal",
    "study_lock",
    "target_from_allocation",
    "uniform_rescale",
    "variance_drop_percent",
    "zcdp_claim_delta",
    "zcdp_optimum",
]
