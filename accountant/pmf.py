"""Certified probability mass function of a lattice sum with a small span (exact products).

For Y = Σ_k b_k X_k with X_k ~ N_Z(0, σ_k²) (m_k copies each) whose effective support spans few
lattice points (the chooser's bounds: ``EngineConfig.direct_pmf_max_span``, ``split_pmf_max_span``,
``nested_pmf_max_span``), the whole pmf is computed directly: each X_k's pmf
e^{−x²/(2σ²)}/θ₃(0, τ) (normaliser from :mod:`accountant.theta`) is truncated to |x| ≤ R_k,
written as a polynomial in z^{b_k}, raised to the power m_k and multiplied together in Arb
ball arithmetic (``arb_poly``, rigorous radii), trimming negligible ends after each product.

Every truncation only *removes* non-negative mass, so the computed coefficients c_y satisfy
c_y ≤ P[Y = y] and the total removed mass is exactly E = 1 − Σ_y c_y, enclosed by Arb.  Hence

    Σ_{y ≥ k} c_y  ≤  P[Y ≥ k]  ≤  Σ_{y ≥ k} c_y + E,

a certified enclosure whose width is driven below the requested error by the truncation radii
and the working precision.  This is the leaf engine of nested exact splits
(:mod:`accountant.split`): there the inner sums need tails at thousands of thresholds, which a
pmf table answers by lookup.  Method context: Su, Su & Wang, arXiv 2606.29835 (the direct
convolution the paper's characteristic-function method replaces; it is competitive only on small
spans, which the split produces).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from flint import arb, arb_poly, ctx, fmpq

from .certified import Certified, arb_to_certified, ball, log_of
from .engine import DEFAULT_CONFIG, EngineDiagnostics, TailStats, stats_diagnostics
from .lattice import sub_gaussian_sd, sub_gaussian_variance
from .theta import theta0, theta_tau

__all__ = ["MAX_PMF_SPAN", "PmfEngine", "pmf_span"]

#: the span (lattice points between the extreme kept values) planned for the largest tables (the
#: leaves of nested splits); a build whose running product exceeds 4× this is refused.
MAX_PMF_SPAN = DEFAULT_CONFIG.nested_pmf_max_span
#: a table is built for this fraction of the requested error (one build serves refinements).
TABLE_SLACK = 1e-6
#: tables kept per engine (one per target bucket of 6 decades).
MAX_TABLES = 4
#: smallest target (natural log) a table is built for (working precision ≲ 3.4e3 bits).
MIN_LOG_TARGET = -1000 * math.log(10)
#: sub-Gaussian radius multiplier used to *predict* the span (planning only).
_SPAN_SIGMAS = 18.0


def pmf_span(groups) -> float:
    """Predicted span of the pmf table of ``groups`` (planning only)."""
    return 2 * _SPAN_SIGMAS * sub_gaussian_sd(groups) + 1


def _trim(coeffs: list, offset: int, budget: arb) -> tuple[list, int]:
    """Drop end coefficients while their summed upper bounds stay below ``budget``."""
    lo, hi = 0, len(coeffs)
    spent = arb(0)
    while lo < hi - 1:
        nxt = spent + coeffs[lo]
        if nxt.upper() > budget:
            break
        spent, lo = nxt, lo + 1
    while hi - 1 > lo:
        nxt = spent + coeffs[hi - 1]
        if nxt.upper() > budget:
            break
        spent, hi = nxt, hi - 1
    return coeffs[lo:hi], offset + lo


def _mul_spread(dense: list, q: list, b: int) -> list:
    """Coefficients of D(z)·Q(z^b) (D = ``dense``, Q = ``q``), by decimation.

    D(z) = Σ_r z^r D_r(z^b) over residues r mod b, so D(z)Q(z^b) = Σ_r z^r (D_r·Q)(z^b): b
    short products instead of one product of two long, mostly-zero polynomials.
    """
    if b == 1:
        return (arb_poly(dense) * arb_poly(q)).coeffs()
    qp = arb_poly(q)
    out_len = len(dense) + (len(q) - 1) * b
    out = [arb(0)] * out_len
    for r in range(min(b, len(dense))):
        part = dense[r::b]
        prod = (arb_poly(part) * qp).coeffs()
        if prod:  # coeffs() drops trailing zeros
            out[r : r + b * (len(prod) - 1) + 1 : b] = prod
    return out


@dataclass
class PmfEngine:
    """Tails of a small-span lattice sum from its certified pmf table (see module docstring; an
    :class:`accountant.engine.Engine`, kind ``"pmf"``)."""

    name: ClassVar[str] = "pmf"

    groups: tuple
    improvable: bool = True
    #: tables by target bucket (see :meth:`tails_ball`), each as built by :meth:`_build`:
    #: (log target, offset, suffix sums, removed mass E, working bits)
    _tables: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        self._last = None  # the table used by the last batch
        self._batch = None  # (results, targets) of the last batch, for diagnostics()
        self.v_sg = sub_gaussian_variance(self.groups)
        self.var = float(self.v_sg)

    @property
    def stats(self) -> TailStats:
        """``n_nodes`` = length of the last batch's table (suffix sums)."""
        t = self._last
        return TailStats(n_nodes=0 if t is None else len(t[2]))

    def diagnostics(self, assess: bool = True) -> EngineDiagnostics:
        """Diagnostics of the last batch (see :class:`accountant.engine.Engine`)."""
        return stats_diagnostics(self.name, self.stats, self.improvable, self._batch, assess)

    def _build(self, log_t: float):
        """pmf table with removed mass E ≤ about e^``log_t`` (enclosed exactly, whatever it is):
        ``(log_t, offset, S, E, bits)`` with S[i] = Σ_{y ≥ offset+i} c_y (S[-1] = 0) and E = 1 − S[0]."""
        n = len(self.groups)
        bits = int(max(128, -log_t / math.log(2) + 64 + math.log2(pmf_span(self.groups))))
        old = ctx.prec
        ctx.prec = bits
        try:
            budget = arb(log_t).exp() / (4 * n)
            dense, offset = [arb(1)], 0
            # fine weights first: the running product stays dense and the decimated products short
            for g in sorted(self.groups, key=lambda g: g.b):
                q, qoff = self._component_power(g, log_t, n, budget)
                dense = _mul_spread(dense, q, g.b)
                offset += qoff * g.b
                dense, offset = _trim(dense, offset, budget)
                if len(dense) > 4 * MAX_PMF_SPAN:
                    raise ValueError(f"PmfEngine: span {len(dense)} exceeds {4 * MAX_PMF_SPAN}")
            # suffix sums S[i] = Σ_{y ≥ offset+i} c_y, and E = 1 − S[0]
            suffix = [arb(0)] * (len(dense) + 1)
            acc = arb(0)
            for i in range(len(dense) - 1, -1, -1):
                acc = acc + dense[i]
                suffix[i] = acc
            return (log_t, offset, suffix, 1 - acc, bits)
        finally:
            ctx.prec = old

    @staticmethod
    def _component_power(g, log_t: float, n: int, budget: arb) -> tuple[list, int]:
        """Trimmed pmf of X_1 + … + X_m (m = g.mult copies of N_Z(0, σ²)) as (coeffs, offset)."""
        s2 = float(g.sigma2)
        # mass beyond R of one X: ≤ 2 e^{-(R+1)²/(2σ²)} / (1 − e^{-(R+1)/σ²}); aim below budget/(4m)
        want = log_t - math.log(16 * n * g.mult)
        R = math.ceil(math.sqrt(2 * s2 * max(1.0, -want + 1.0))) + 1
        th = theta0(theta_tau(g.sigma2)).real
        s2a = arb(fmpq(g.sigma2.numerator, g.sigma2.denominator))
        base = [(-(arb(x) ** 2) / (2 * s2a)).exp() / th for x in range(-R, R + 1)]
        boff = -R
        q, qoff = [arb(1)], 0
        e = g.mult
        sub = budget / (4 * g.mult)
        while e:  # binary powering, trimming after each product
            if e & 1:
                q, qoff = _trim((arb_poly(q) * arb_poly(base)).coeffs(), qoff + boff, sub)
            e >>= 1
            if e:
                p = arb_poly(base)
                base, boff = _trim((p * p).coeffs(), 2 * boff, sub)
        return q, qoff

    def tails(self, ks: Sequence[int], abs_targets: Sequence) -> list[Certified]:
        out = [arb_to_certified(b, clip01=True) for b in self.tails_ball(ks, abs_targets)]
        self._batch = (out, abs_targets)
        return out

    def tails_ball(self, ks: Sequence[int], abs_targets: Sequence) -> list[arb]:
        """Arb balls containing [Σ_{y≥k} c_y, Σ_{y≥k} c_y + E] ∋ P[Y ≥ k]."""
        log_t = max(min(log_of(t) for t in abs_targets), MIN_LOG_TARGET)
        # one table per target bucket [10^(6b), 10^(6b+6)), built for the bucket's lower end
        # times TABLE_SLACK: a call's result depends on its own targets only, never on which
        # tables earlier calls built
        bucket = math.floor(log_t / math.log(10) / 6)
        table = self._tables.get(bucket)
        if table is None:
            table = self._build(6 * bucket * math.log(10) + math.log(TABLE_SLACK))
            if len(self._tables) >= MAX_TABLES:
                self._tables.pop(next(iter(self._tables)))
            self._tables[bucket] = table
        self._last = table
        _, offset, suffix, removed, bits = table
        hi_idx = len(suffix) - 1
        old = ctx.prec
        ctx.prec = bits
        try:
            zero = arb(0)
            pad = ball(zero, arb(removed.upper()))  # ∋ the removed mass above k
            out = []
            for k in ks:
                i = int(k) - offset
                s = suffix[0] if i <= 0 else (zero if i >= hi_idx else suffix[i])
                out.append(s + pad)
            self._batch = (out, abs_targets)
            return out
        finally:
            ctx.prec = old
