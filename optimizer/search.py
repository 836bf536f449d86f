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
the full spine path — every geolevel present — composed with itself); :mod:`optimizer.confirm`
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
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import sys
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_FLOOR, Decimal, localcontext
from fractions import Fraction
from pathlib import Path
from typing import Any

import mpmath

from accountant.decimals import outward

from .allocation import Allocation, GeolevelBudget

__all__ = [
    "CONVERSIONS",
    "Calibration",
    "SearchResult",
    "SolverWarning",
    "StudyLockedError",
    "Target",
    "calibrate_shape",
    "config_hash",
    "equal_weights",
    "mpf_to_fraction",
    "objective",
    "proxy_composition",
    "proxy_delta",
    "reallocate",
    "resolve_storage",
    "study_lock",
    "target_from_allocation",
    "uniform_rescale",
    "variance_drop_percent",
    "zcdp_optimum",
]

CONVERSIONS = ("bun-steinke", "cks")

#: Certified δ tolerances used for the final (reported, compared-to-target) evaluations.
TOL_FINAL, RTOL_FINAL = 1e-35, 1e-20
#: Looser tolerances inside the search (a trial's δ only needs ~10 correct digits; the final
#: allocation is re-certified with the final tolerances).
TOL_SEARCH, RTOL_SEARCH = 1e-30, 1e-10
#: Relative bracket tolerance on c for brentq (final: ~1e-14; search: 1e-10).
XTOL_FINAL, XTOL_SEARCH = 1e-14, 1e-10
#: Largest denominator of the exact factor c (limit_denominator), and the relative step by
#: which c is lowered until the certified δ.upper ≤ target.
C_MAX_DENOMINATOR = 10**12
C_STEP = 1e-12
#: Shapes proposed by the solvers are quantised to this common denominator (exact fractions
#: with one denominator keep the accountant's integer lattice small: the node count grows
#: linearly with it, so 10^5 — a 1% step on the smallest production budget, 11/10000 —
#: keeps a proxy evaluation near 0.1 s where 10^6 took ~1 s).
SHAPE_DENOMINATOR = 10**5
#: Digits of the target ε string (rounded *down*: a smaller ε is the conservative side).
EPS_DIGITS = 40


# ====================================================================== target
@dataclass(frozen=True)
class Target:
    """A promised (ε, δ) guarantee.

    Args:
        epsilon: ε as an exact decimal string (an ``mpf``/number is converted to a string of
            ``EPS_DIGITS`` digits rounded down — the conservative side).
        delta: δ as an exact decimal/fraction string (or a Fraction/int/float, converted).
        conversion: the zCDP → (ε, δ) conversion that defined the promise
            (``"bun-steinke"`` default, or ``"cks"``); informative only.
    """

    epsilon: str
    delta: str = "1e-10"
    conversion: str = "bun-steinke"

    def __post_init__(self):
        object.__setattr__(self, "epsilon", _decimal_string(self.epsilon, "epsilon"))
        object.__setattr__(self, "delta", _decimal_string(self.delta, "delta", exact=True))
        if self.conversion not in CONVERSIONS:
            raise ValueError(f"Target: conversion must be one of {CONVERSIONS}, got {self.conversion!r}")
        if not self.epsilon_fraction > 0:
            raise ValueError(f"Target: epsilon must be > 0, got {self.epsilon}")
        if not 0 < self.delta_fraction < 1:
            raise ValueError(f"Target: delta must be in (0, 1), got {self.delta}")

    @property
    def epsilon_fraction(self) -> Fraction:
        return Fraction(self.epsilon)

    @property
    def delta_fraction(self) -> Fraction:
        return Fraction(self.delta)

    def as_dict(self) -> dict:
        return {"epsilon": self.epsilon, "delta": self.delta, "conversion": self.conversion}


def _decimal_string(x: Any, name: str, *, exact: bool = False) -> str:
    if isinstance(x, str):
        text = x.strip()
        try:
            Fraction(text)
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"Target: {name} {x!r} is not a decimal or fraction string") from None
        return text
    if isinstance(x, bool):
        raise TypeError(f"Target: {name} must be a number or string, got {x!r}")
    if isinstance(x, (int, Fraction)):
        return str(x)
    if isinstance(x, float):
        return repr(x) if exact else str(Decimal(x))
    if isinstance(x, mpmath.mpf):
        with mpmath.workdps(EPS_DIGITS + 20):
            d = Decimal(mpmath.nstr(x, EPS_DIGITS + 15))
        with localcontext() as ctx:
            ctx.prec = 2 * EPS_DIGITS + 40
            q = d.quantize(Decimal(1).scaleb(d.adjusted() - EPS_DIGITS + 1), rounding=ROUND_FLOOR)
            return format(q.normalize(), "f")
    raise TypeError(f"Target: {name} must be a string, number or mpf, got {type(x).__name__}")


def target_from_allocation(alloc: Allocation, delta: Any = "1e-10", conversion: str = "bun-steinke") -> Target:
    """The promise of ``alloc``: ε = conversion(total ρ, δ), ε rounded down to 40 digits.

    >>> from optimizer.allocation import load_builtin
    >>> target_from_allocation(load_builtin("dhc-persons")).epsilon[:20]
    '26.34058885272232435'
    """
    from accountant import zcdp

    if conversion not in CONVERSIONS:
        raise ValueError(f"target_from_allocation: conversion must be one of {CONVERSIONS}, got {conversion!r}")
    d = _decimal_string(delta, "delta", exact=True)
    fn = zcdp.epsilon_bun_steinke if conversion == "bun-steinke" else zcdp.epsilon_cks
    return Target(fn(alloc.total_rho, d), d, conversion)


def zcdp_claim_delta(rho: Fraction, eps: Any, conversion: str) -> mpmath.mpf:
    """δ the zCDP conversion claims for total ρ at ε."""
    from accountant import zcdp

    fn = zcdp.delta_bun_steinke if conversion == "bun-steinke" else zcdp.delta_cks
    return fn(rho, eps)


# ====================================================================== proxy
def _full_path_rho(alloc: Allocation) -> tuple[Fraction, ...]:
    """Budgets on the full-spine path (every geolevel present: no merging) — path 13 of DHC."""
    return tuple(r for _, _, r in alloc.items())


def _composition(rhos: Sequence[Fraction], multiplicity: int = 2):
    from accountant import Composition, DiscreteGaussian

    counts: dict[Fraction, int] = {}
    for r in rhos:
        counts[r] = counts.get(r, 0) + multiplicity
    return Composition({DiscreteGaussian.from_rho(r): n for r, n in counts.items()})


def proxy_composition(alloc: Allocation):
    """[M_full, M_full]: the full-spine path (path 13 for DHC persons) composed with itself."""
    return _composition(_full_path_rho(alloc))


def proxy_delta(alloc: Allocation, target: Target, *, tol: float = TOL_FINAL, rtol: float = RTOL_FINAL):
    """Certified δ(target ε) of the proxy pair of ``alloc``."""
    return proxy_composition(alloc).delta(target.epsilon, tol=tol, rtol=rtol)


def mpf_to_fraction(x) -> Fraction:
    """The exact rational value of a finite ``mpmath.mpf``."""
    x = mpmath.mpf(x)
    if not mpmath.isfinite(x):
        raise ValueError(f"mpf_to_fraction: not finite: {x}")
    sign, man, exp, _ = x._mpf_  # (mpf.man_exp drops the sign)
    return (-1 if sign else 1) * Fraction(man) * (Fraction(2) ** exp)


def certified_ok(delta_certified, target: Target) -> bool:
    """δ.upper ≤ target δ, compared exactly."""
    return mpf_to_fraction(delta_certified.upper) <= target.delta_fraction


# ====================================================================== objective
def equal_weights(alloc: Allocation) -> dict[tuple[str, str], Fraction]:
    return {(g, q): Fraction(1) for g, q, _ in alloc.items()}


def _weights(alloc: Allocation, weights: Mapping[tuple[str, str], Any] | None) -> dict[tuple[str, str], float]:
    if weights is None:
        return dict.fromkeys(equal_weights(alloc), 1.0)
    out = {}
    for g, q, _ in alloc.items():
        if (g, q) not in weights:
            raise ValueError(f"weights: no weight for ({g!r}, {q!r})")
        raw = weights[(g, q)]
        try:
            w = float(raw)
        except OverflowError:
            w = math.inf
        if not (w > 0 and math.isfinite(w)):
            try:
                positive = Fraction(raw) > 0
            except (TypeError, ValueError):
                positive = False
            if positive:  # exact weight > 0 that a double cannot hold
                with localcontext() as ctx:
                    ctx.prec = 3
                    shown = Decimal(Fraction(raw).numerator) / Decimal(Fraction(raw).denominator)
                raise ValueError(
                    f"weights: ({g!r}, {q!r}) = {shown} is > 0 but {'over' if w else 'under'}flows "
                    f"to {w} in the objective (double precision); use weights in [1e-100, 1e100]"
                )
            raise ValueError(f"weights: ({g!r}, {q!r}) must be > 0, got {raw!r}")
        out[(g, q)] = w
    extra = set(weights) - set(out)
    if extra:
        raise ValueError(f"weights: unknown measurement(s) {sorted(extra)[:3]}")
    return out


def objective(alloc: Allocation, weights: Mapping[tuple[str, str], Any] | None = None) -> float:
    """Weighted variance Σ_q w_q σ_q² = Σ_q w_q / ρ_q over the nominal measurements."""
    w = _weights(alloc, weights)
    return math.fsum(w[(g, q)] / float(r) for g, q, r in alloc.items())


def variance_drop_percent(new: Allocation, baseline: Allocation, weights=None) -> float:
    """100·(1 − objective(new)/objective(baseline))."""
    return 100.0 * (1.0 - objective(new, weights) / objective(baseline, weights))


# ====================================================================== stage 1
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
    """Largest exact c with certified δ(ε; ρ·c).upper ≤ δ for the composition ``builder(ρ·c)``.

    Returns ``(c, certified δ at c, number of δ evaluations)``.
    """
    from scipy.optimize import brentq

    build = builder or _composition
    log_target = math.log(target.delta_fraction)
    n_eval = 0
    cache: dict[float, float] = {}

    def delta_at(c: Fraction, t=tol, r=rtol):
        nonlocal n_eval
        n_eval += 1
        return build([x * c for x in rhos]).delta(target.epsilon, tol=t, rtol=r)

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


def _apply(alloc: Allocation, rhos: Sequence[Fraction]) -> Allocation:
    it = iter(rhos)
    levels = tuple(GeolevelBudget(lv.name, lv.queries, tuple(next(it) for _ in lv.rho)) for lv in alloc.levels)
    return Allocation(levels, alloc.name, alloc.provenance, alloc.run_type)


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


# ====================================================================== stage 2
class SolverWarning(RuntimeWarning):
    """A convex solver's status short of ``OPTIMAL``, explained in one line: what it affects (a
    starting shape) and why the exact accountant's later check keeps every guarantee intact.
    The CLI prints it as one ``note:`` line (``optimizer.cli``)."""


def zcdp_optimum(
    alloc: Allocation,
    weights: Mapping[tuple[str, str], Any] | None = None,
    *,
    floor: Fraction | None = None,
    return_info: bool = False,
):
    """Stage 2: minimise Σ w_q/ρ_q subject to Σ ρ_q ≤ total ρ of ``alloc`` and ρ_q ≥ floor.

    Solved by cvxpy with Clarabel (``cp.inv_pos``); only ``OPTIMAL`` is accepted
    (``OPTIMAL_INACCURATE`` warns, anything else raises).  The solution is quantised to exact
    fractions with denominator ``SHAPE_DENOMINATOR`` (rounded down, at least 1/denominator)
    so the total stays ≤ the baseline total — the same zCDP guarantee.  Closed form of the
    optimum: ρ_q = R·√w_q / Σ √w.
    """
    import cvxpy as cp
    import numpy as np

    w = _weights(alloc, weights)
    keys = [(g, q) for g, q, _ in alloc.items()]
    total = alloc.total_rho
    scale = float(total)
    n = len(keys)
    lo = float(floor) / scale if floor is not None else 1e-6 / n
    wv = np.array([w[k] for k in keys], dtype=float)
    wv = wv / wv.max()
    x = cp.Variable(n)  # x = ρ / R (well scaled)
    prob = cp.Problem(cp.Minimize(wv @ cp.inv_pos(x)), [cp.sum(x) <= 1, x >= lo])
    with warnings.catch_warnings():  # cvxpy's own multi-line advice is replaced by one line below
        warnings.simplefilter("ignore", UserWarning)
        prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    if prob.status == cp.OPTIMAL_INACCURATE:
        warnings.warn(
            SolverWarning(
                "the convex solver (cvxpy/Clarabel) stopped at OPTIMAL_INACCURATE on the zCDP-optimum shape; "
                "that shape is only a starting point: it is quantised, calibrated by the exact accountant and "
                "confirmed on all pairs like every other allocation, so no reported guarantee depends on it"
            ),
            stacklevel=2,
        )
    elif prob.status != cp.OPTIMAL:
        raise RuntimeError(f"zcdp_optimum: convex solver (cvxpy/Clarabel) status {prob.status}")
    xs = np.maximum(np.asarray(x.value, dtype=float), lo)
    xs = xs / xs.sum()
    D = SHAPE_DENOMINATOR
    rhos = [max(Fraction(math.floor(v * scale * D), D), Fraction(1, D)) for v in xs]
    s = sum(rhos, Fraction(0))
    if s > total:  # exact guard (floors keep this from happening unless the floor binds)
        rhos = [r * total / s for r in rhos]
    out = _apply(alloc, rhos)
    out = Allocation(
        out.levels, alloc.name, _note(alloc.provenance, "zCDP-optimum shape (cvxpy/Clarabel)"), alloc.run_type
    )
    if return_info:
        import cvxpy

        return out, {
            "solver": "CLARABEL",
            "status": prob.status,
            "cvxpy": cvxpy.__version__,
            "solver_objective": float(prob.value) * float(max(w.values())) / scale,
        }
    return out


# ====================================================================== stage 3
@dataclass
class SearchResult:
    """Outcome of :func:`reallocate`."""

    allocation: Allocation  # calibrated, certified best allocation
    c: Fraction  # calibration factor of the best shape
    delta: Any  # certified proxy δ(target ε) of ``allocation``
    objective: float
    baseline_objective: float
    study_name: str
    n_trials_total: int
    n_trials_run: int
    best_trial: int
    best_params: dict
    config_hash: str
    seconds: float
    trials_per_minute: float
    seconds_per_trial: float
    evaluations_per_trial: float
    bound: float
    info: dict = field(default_factory=dict)

    @property
    def variance_drop_percent(self) -> float:
        return 100.0 * (1.0 - self.objective / self.baseline_objective)


def config_hash(alloc: Allocation, target: Target, weights=None, extra: Mapping | None = None) -> str:
    """sha256 of the canonical JSON of everything that defines a search (trial count excluded)."""
    w = _weights(alloc, weights)
    doc = {
        "allocation": [[g, q, str(r)] for g, q, r in alloc.items()],
        "target": target.as_dict(),
        "weights": [[g, q, repr(w[(g, q)])] for g, q, _ in alloc.items()],
        "shape_denominator": SHAPE_DENOMINATOR,
        "extra": dict(extra or {}),
    }
    return hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def resolve_storage(storage: Any, scenario: str | None = None, runs_dir: str | Path = "runs"):
    """Optuna storage: an object as is; ``"sqlite:///…"``-style URLs; other strings/paths =
    journal files; ``None`` = ``runs/<scenario>/optuna.journal`` (in memory without a scenario)."""
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    if storage is None:
        if scenario is None:
            return optuna.storages.InMemoryStorage()
        storage = Path(runs_dir) / scenario / "optuna.journal"
    if isinstance(storage, (str, Path)):
        text = str(storage)
        if text == ":memory:":
            return optuna.storages.InMemoryStorage()
        if "://" in text:
            return text
        Path(text).parent.mkdir(parents=True, exist_ok=True)
        return JournalStorage(JournalFileBackend(text))
    return storage


def _param_names(alloc: Allocation) -> tuple[list[str], list[str]]:
    gnames = [f"g:{g}" for g in alloc.geolevels]
    qnames = [f"q:{g}/{q}" for g, q, _ in alloc.items()]
    return gnames, qnames


def _shape_params(alloc: Allocation, shape: Allocation) -> dict[str, float]:
    """Log-multipliers expressing ``shape`` relative to ``alloc`` (geolevel mean + residual)."""
    out: dict[str, float] = {}
    base = {(g, q): r for g, q, r in alloc.items()}
    new = {(g, q): r for g, q, r in shape.items()}
    total_ratio = math.log(float(shape.total_rho) / float(alloc.total_rho))
    for lv in alloc.levels:
        logs = [math.log(float(new[(lv.name, q)]) / float(base[(lv.name, q)])) - total_ratio for q in lv.queries]
        m = math.fsum(logs) / len(logs)
        out[f"g:{lv.name}"] = m
        for q, v in zip(lv.queries, logs):
            out[f"q:{lv.name}/{q}"] = v - m
    return out


def _shape_from_params(alloc: Allocation, params: Mapping[str, float]) -> Allocation:
    """Quantised shape ρ_q ∝ ρ_base_q·exp(a_g + b_q), normalised to the baseline total."""
    raw = []
    for g, q, r in alloc.items():
        raw.append(float(r) * math.exp(params.get(f"g:{g}", 0.0) + params.get(f"q:{g}/{q}", 0.0)))
    s = math.fsum(raw)
    total = float(alloc.total_rho)
    D = SHAPE_DENOMINATOR
    rhos = [max(Fraction(math.floor(v / s * total * D), D), Fraction(1, D)) for v in raw]
    return _apply(alloc, rhos)


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": sys.version.split()[0]}
    for name in ("census-plb", "numpy", "scipy", "mpmath", "python-flint", "cvxpy", "clarabel", "optuna", "pandas"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "absent"
    return out


def _journal_path(storage: Any, scenario: str | None, runs_dir: str | Path = "runs") -> Path | None:
    """The local file a study in ``storage`` lives in, which :func:`study_lock` locks: the journal
    file :func:`resolve_storage` uses, or the database file of a ``sqlite:///FILE`` URL.  ``None``
    for in-memory studies, storage objects and database servers (``postgresql://…``, …), which
    several processes or machines may share on purpose (:func:`_shared_seed`)."""
    if storage is None:
        return None if scenario is None else Path(runs_dir) / scenario / "optuna.journal"
    if isinstance(storage, (str, Path)):
        text = str(storage)
        if text == ":memory:":
            return None
        if "://" not in text:
            return Path(text)
        scheme, _, rest = text.partition("://")
        if scheme.split("+")[0].lower() == "sqlite" and rest.startswith("/") and rest not in ("/", "/:memory:"):
            return Path(rest[1:].split("?")[0])  # sqlite:///rel.db → rel.db, sqlite:////abs.db → /abs.db
    return None


def _shared_seed(seed: int, n_trials_before: int, process: str) -> int:
    """The sampler seed of a run on a study that other processes may be using at the same time
    (a database server, not locked): derived from ``seed``, the trials already there and this
    process's identity, so concurrent runs draw different parameters and share their trials."""
    digest = hashlib.sha256(f"census-plb-shared:{seed}:{n_trials_before}:{process}".encode()).hexdigest()
    return int(digest[:8], 16)


class StudyLockedError(RuntimeError):
    """Another live process is running trials on the same study journal."""


@contextlib.contextmanager
def study_lock(journal: str | Path):
    """Hold ``<journal>.run.lock`` (an advisory ``flock``; the file names the owner's pid, host and
    start time) for the duration of the block.  A lock file left by a dead process is not held by
    anyone and is taken over; a live owner makes this raise :class:`StudyLockedError`."""
    import os
    import socket

    try:
        import fcntl
    except ImportError:  # not POSIX: no advisory locks; run unlocked, say so
        warnings.warn(
            f"study_lock: no fcntl on this platform; {journal} is not protected against concurrent runs", stacklevel=3
        )
        yield None
        return
    path = Path(str(journal) + ".run.lock")  # not ".lock": Optuna's JournalFileBackend uses that itself
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                owner = json.loads(os.read(fd, 4096).decode() or "{}")
            except ValueError:
                owner = {}
            os.close(fd)
            raise StudyLockedError(
                f"optuna study journal {journal} is in use by pid {owner.get('pid', '?')} on "
                f"{owner.get('host', '?')} (since {owner.get('started', '?')}); another `census-plb optimize` is "
                f"running trials on this study: wait for it to finish, or give another --storage / --out"
            ) from None
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino  # not unlinked by a finishing owner meanwhile
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.write(
            fd,
            json.dumps(
                {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
            ).encode(),
        )
        os.fsync(fd)
        yield path
    finally:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        os.close(fd)


def _resume_seed(seed: int, n_trials_before: int) -> int:
    """The sampler seed of a run that finds ``n_trials_before`` trials in its study: ``seed`` for a
    fresh study (reproducible), else derived from both, so a resumed study draws new parameters."""
    if n_trials_before == 0:
        return seed
    digest = hashlib.sha256(f"census-plb-resume:{seed}:{n_trials_before}".encode()).hexdigest()
    return int(digest[:8], 16)


def reallocate(
    alloc: Allocation,
    target: Target,
    weights: Mapping[tuple[str, str], Any] | None = None,
    n_trials: int = 30,
    seed: int = 0,
    storage: Any = None,
    *,
    scenario: str | None = None,
    **kw,
) -> SearchResult:
    journal = _journal_path(storage, scenario)
    with study_lock(journal) if journal is not None else contextlib.nullcontext():
        return _reallocate(
            alloc, target, weights, n_trials, seed, storage, scenario=scenario, exclusive=journal is not None, **kw
        )


def _reallocate(
    alloc: Allocation,
    target: Target,
    weights: Mapping[tuple[str, str], Any] | None = None,
    n_trials: int = 30,
    seed: int = 0,
    storage: Any = None,
    *,
    scenario: str | None = None,
    bound: float = 1.0,
    uniform_c: Fraction | None = None,
    zcdp_shape: Allocation | None = None,
    progress: bool = True,
    log=None,
    exclusive: bool = False,
    score: Callable[[Allocation], float] | None = None,
    violation: Callable[[Allocation], float] | None = None,
    study_extra: Mapping[str, Any] | None = None,
) -> SearchResult:
    """Stage 3: Optuna TPE over per-geolevel and per-query log-multipliers of the shape.

    Each trial's shape ρ_q ∝ ρ*_q·exp(a_g + b_q), a, b ∈ [−bound, bound], is centred on the
    zCDP-optimum shape ρ* of stage 2 (random shapes far from it were 100–1500× worse), is
    quantised to exact fractions with denominator ``SHAPE_DENOMINATOR``, calibrated by stage-1
    root-finding on the proxy so that it meets ``target`` exactly, and scored by
    :func:`objective`.  The study (``TPESampler(seed,
    multivariate=True)``, ``NopPruner``, ask/tell) is stored in ``storage`` (see
    :func:`resolve_storage`) under ``"<scenario>-<config hash[:12]>"`` with
    ``load_if_exists=True``: calling again continues the same study — ``n_trials`` *more*
    trials.  A new study is seeded with the zCDP-optimum shape and the Bureau's shape
    (clipped to the bounds).

    Resuming: the sampler seed of a run that finds k trials in the study is derived from
    (``seed``, k) (:func:`_resume_seed`), so it continues with new parameters instead of
    re-drawing the first run's.  A journal-file study is used by one process at a time
    (:func:`study_lock`, ``<journal>.run.lock``; a second run refuses with the owner's pid); trials
    left RUNNING by an interrupted run are then marked FAILED, and a seed shape lost that way is
    queued again.  A ``sqlite:///FILE`` URL is locked the same way (on ``FILE.run.lock``).  A
    database server URL is not locked: it is how Optuna shares one study between processes, so
    such a run draws from a seed mixed with its process identity (:func:`_shared_seed`) and uses
    every trial in the study; RUNNING trials there may belong to live runs and are left alone.

    Objective and guard: by default a trial scores :func:`objective` (weighted sum of
    variances). ``score`` replaces it (a function of the trial's calibrated allocation, lower is
    better); ``violation`` (≥ 0, 0 when a constraint such as the Pareto guard holds) multiplies the
    score by ``1 + 1000·violation``, so infeasible shapes rank behind every feasible one of similar
    score — the caller must still check the returned allocation. ``study_extra`` (the objective's
    name, the guard, …) enters the study's config hash, so a study of another objective is never
    resumed.

    Returns:
        :class:`SearchResult` with the best shape re-calibrated with the final tolerances.
    """
    import optuna

    if n_trials < 0:
        raise ValueError(f"reallocate: n_trials must be >= 0, got {n_trials}")
    t_start = time.perf_counter()
    say = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    w = _weights(alloc, weights)
    base_obj = objective(alloc, w)
    if uniform_c is None:
        uniform_c = calibrate_shape(alloc, target, hint=1.1, final=False).c
    if zcdp_shape is None:
        zcdp_shape = zcdp_optimum(alloc, w)
    # the search is centred on the zCDP-optimum shape (the best the zCDP world can do); trials
    # explore log-multipliers around it, and the Bureau's shape is enqueued as a second seed
    center = zcdp_shape
    seed_params = _shape_params(center, alloc)
    bound = float(bound)
    chash = config_hash(
        alloc,
        target,
        w,
        {
            "bound": bound,
            "seed": seed,
            "center": "zcdp-optimum",
            "shape_denominator": SHAPE_DENOMINATOR,
            **dict(study_extra or {}),
        },
    )
    name = f"{scenario or alloc.name}-{chash[:12]}"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        study_name=name,
        storage=resolve_storage(storage, scenario),
        direction="minimize",
        sampler=optuna.samplers.TPESampler(seed=seed, multivariate=True),
        pruner=optuna.pruners.NopPruner(),
        load_if_exists=True,
    )
    gnames, qnames = _param_names(alloc)
    dist = optuna.distributions.FloatDistribution(-bound, bound)
    distributions: dict[str, optuna.distributions.BaseDistribution] = dict.fromkeys(gnames + qnames, dist)
    n_before = len(study.trials)
    if not exclusive and isinstance(storage, str) and "://" in storage:  # a shared database: not locked
        import os
        import socket

        process = f"{socket.gethostname()}:{os.getpid()}:{time.time_ns()}"
        study.sampler = optuna.samplers.TPESampler(seed=_shared_seed(seed, n_before, process), multivariate=True)
        say(
            f"storage {storage.partition('://')[0]}://… is a shared database (not locked): runs on it at the same "
            "time share the study's trials, each drawing its own parameters (this run is not reproducible by seed)"
        )
    elif n_before:
        study.sampler = optuna.samplers.TPESampler(seed=_resume_seed(seed, n_before), multivariate=True)
    if n_before and exclusive:  # we hold the study's lock: RUNNING trials belong to dead runs
        TS = optuna.trial.TrialState
        for t in study.get_trials(deepcopy=False, states=(TS.RUNNING,)):
            study.tell(t.number, state=TS.FAIL)
            say(f"trial {t.number} was left running by an interrupted run: marked FAILED")
        trials = study.get_trials(deepcopy=False)
        have = {t.user_attrs.get("seed_shape") for t in trials if t.state in (TS.COMPLETE, TS.WAITING)}
        for t in trials:
            label = t.user_attrs.get("seed_shape")
            if t.state == TS.FAIL and label and label not in have:
                study.enqueue_trial(t.system_attrs.get("fixed_params") or t.params, user_attrs={"seed_shape": label})
                have.add(label)
    if not study.trials:
        study.set_user_attr("versions", _versions())
        study.set_user_attr("config_hash", chash)
        study.set_user_attr("target", target.as_dict())
        study.set_user_attr("bound", bound)
        study.set_user_attr("objective", "sum_q w_q / rho_q (weighted variance, sigma_q^2 = 1/rho_q)")
        study.enqueue_trial(dict.fromkeys(distributions, 0.0), user_attrs={"seed_shape": "zcdp-optimum"})
        study.enqueue_trial(
            {n: min(max(seed_params[n], -bound), bound) for n in distributions},
            user_attrs={"seed_shape": "baseline (clipped to the bounds)"},
        )
    slope = 30.0
    base_val = score(alloc) if score is not None else base_obj
    hint_total = float(uniform_c)
    evals = 0
    t_trials = time.perf_counter()
    for _k in range(n_trials):
        t0 = time.perf_counter()
        trial = study.ask(distributions)
        shape = _shape_from_params(center, trial.params)
        ratio = float(alloc.total_rho / shape.total_rho)
        rhos = _full_path_rho(shape)
        c, d, n_eval = _calibrate_rhos(
            rhos, target, hint=hint_total * ratio, slope=slope, xtol=XTOL_SEARCH, tol=TOL_SEARCH, rtol=RTOL_SEARCH
        )
        evals += n_eval
        if score is None:
            value = math.fsum(w[(g, q)] / float(r * c) for (g, q, r) in shape.items())
        else:
            calibrated = shape.scaled(c)
            value = score(calibrated)
            excess = violation(calibrated) if violation is not None else 0.0
            if excess > 0:
                value *= 1 + 1000 * excess
                trial.set_user_attr("violation", excess)
        trial.set_user_attr("c", str(c))
        trial.set_user_attr("delta_upper", outward(d.upper, +1, 20))
        trial.set_user_attr("evaluations", n_eval)
        study.tell(trial, value)
        if progress:
            best_value = study.best_value
            say(
                f"trial {trial.number:4d}: objective drop {100 * (1 - value / base_val):9.5f}%  "
                f"(best {100 * (1 - best_value / base_val):9.5f}%)  c={float(c):.10f}  {n_eval} δ evals  "
                f"{time.perf_counter() - t0:6.2f} s"
            )
    t_trials = time.perf_counter() - t_trials
    best = study.best_trial
    best_shape = _shape_from_params(center, best.params)
    hint = float(Fraction(best.user_attrs["c"])) if "c" in best.user_attrs else hint_total
    cal = calibrate_shape(best_shape, target, hint=hint, slope=slope, final=True)
    final = Allocation(
        cal.allocation.levels,
        alloc.name,
        _note(alloc.provenance, f"optuna study {name}, trial {best.number}; calibrated x {cal.c}"),
        alloc.run_type,
    )
    n_done = len([t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE])
    return SearchResult(
        allocation=final,
        c=cal.c,
        delta=cal.delta,
        objective=objective(final, w),
        baseline_objective=base_obj,
        study_name=name,
        n_trials_total=n_done,
        n_trials_run=n_trials,
        best_trial=best.number,
        best_params=dict(best.params),
        config_hash=chash,
        seconds=time.perf_counter() - t_start,
        trials_per_minute=(60.0 * n_trials / t_trials) if n_trials and t_trials > 0 else float("nan"),
        seconds_per_trial=(t_trials / n_trials) if n_trials else float("nan"),
        evaluations_per_trial=(evals / n_trials) if n_trials else float("nan"),
        bound=bound,
        info={"best_seed_shape": best.user_attrs.get("seed_shape")},
    )


reallocate.__doc__ = _reallocate.__doc__
