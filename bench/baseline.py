"""The paper's numerical method, as a timing baseline (docs/method.md §3.2–§3.4).

Su, Su & Wang (arXiv 2606.29835) evaluate P[t ≤ Y ≤ U] for the lattice variable
Y = Σ_k b_k X_k (X_k ~ N_Z(0, σ_k²)) by the *untilted* (λ = 0) N-point trapezoid rule

    P[t ≤ Y ≤ U] ≈ (1/N) Σ_{j=0}^{N−1} φ(ζ_j) W_{t,U}(ζ_j),   ζ_j = 2πj/N,
    φ(ζ) = Π_k φ_{σ_k}(b_k ζ)^{m_k},
    φ_σ(θ) = [1 + 2 Σ_{x=1}^{⌈48σ²⌉+1} cos(θx) e^{−x²/(2σ²)}] / [same at θ = 0],
    W_{t,U}(ζ) = Σ_{n=t}^{U} cos(nζ) = ½[cos tζ + cos Uζ + cot(ζ/2)(sin Uζ − sin tζ)],

with U and N from the sub-Gaussian truncation rule (§3.4), mpmath at 50 digits for (ε, δ) and
35 digits for trade-off curves.  This module implements that rule *densely* (every node of
[0, π], using evenness; no sieve) so that

* on a small composition it can be run in full and checked against the certified accountant
  (:func:`delta_curve`), and
* on the main pair its per-node cost can be measured on a sample of nodes and extrapolated
  linearly to all N/2 + 1 nodes (:func:`time_per_node`); the cost of a node does not depend on
  the node (fixed number of series terms), so linear extrapolation is accurate up to timer noise.

Two term-count rules for φ are offered: ``"paper"`` (⌈48σ²⌉ + 1 terms, as in the paper's code)
and ``"tight"`` (stop once e^{−x²/(2σ²)} < 2^{−prec}: a tuned baseline, for a conservative
speed-up figure).  The Gaussian weights e^{−x²/(2σ²)} are precomputed once per component
(the cosines are not, as they depend on the node).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import mpmath

__all__ = ["PaperPhi", "PaperPlan", "delta_curve", "plan", "tail_range", "thresholds", "time_per_node"]


@dataclass(frozen=True)
class PaperPlan:
    """Truncation point U and node count N of the paper's rule (§3.4)."""

    U: int
    N: int
    v: float  # sub-Gaussian variance proxy Σ m b² σ² of Y
    tol: float

    @property
    def half_nodes(self) -> int:
        """Nodes on [0, π] (what a dense evaluation using evenness touches): N/2 + 1."""
        return self.N // 2 + 1


def _round_up(x: float, step: int) -> int:
    n = math.ceil(x)
    return n if step <= 1 else -(-n // step) * step


def plan(groups: Sequence[tuple[Fraction, int, int]], tol: float, round_to: int = 10_000) -> PaperPlan:
    """U = ⌈√(2v ln(8/Δ))⌉, N = ⌈2U + d ln(2d)⌉ with d = √(v/(2 ln(8/Δ))), rounded up to ``round_to``.

    Args:
        groups: (σ², b, multiplicity) per distinct component.
        tol: Δ.
        round_to: the paper rounds U and N up to multiples of 10⁴; use 1 for small problems.
    """
    v = float(sum(Fraction(m * b * b) * Fraction(s2) for s2, b, m in groups))
    lnf = math.log(8.0 / tol)
    U = _round_up(math.sqrt(2.0 * v * lnf), round_to)
    d = math.sqrt(v / (2.0 * lnf))
    N = _round_up(2 * U + d * math.log(max(2.0 * d, 1.0 + 1e-9)), round_to)
    N += N % 2
    return PaperPlan(U=U, N=N, v=v, tol=tol)


def groups_of(comp) -> list[tuple[Fraction, int, int]]:
    """(σ², b, m) triples of a :class:`accountant.Composition`."""
    return [(m.sigma2, b, c) for (m, c), b in zip(comp.groups, comp.lattice.weights)]


class PaperPhi:
    """φ(ζ) = Π_k φ_{σ_k}(b_k ζ)^{m_k} by direct summation at the current mpmath precision."""

    def __init__(self, groups: Sequence[tuple[Fraction, int, int]], terms: str = "paper"):
        if terms not in ("paper", "tight"):
            raise ValueError(f"terms must be 'paper' or 'tight', got {terms!r}")
        self.groups = list(groups)
        self.terms = terms
        self._w = []
        for s2, b, m in self.groups:
            s2m = mpmath.mpf(Fraction(s2).numerator) / Fraction(s2).denominator
            if terms == "paper":
                X = math.ceil(48 * float(s2)) + 1
            else:
                X = math.ceil(math.sqrt(2 * float(s2) * mpmath.mp.prec * math.log(2))) + 1
            w = [mpmath.exp(-mpmath.mpf(x * x) / (2 * s2m)) for x in range(1, X + 1)]
            norm = 1 + 2 * mpmath.fsum(w)
            self._w.append((w, norm, b, m))

    @property
    def terms_per_node(self) -> int:
        return sum(len(w) for w, _, _, _ in self._w)

    def __call__(self, zeta) -> mpmath.mpf:
        prod = mpmath.mpf(1)
        cos = mpmath.cos
        for w, norm, b, m in self._w:
            th = b * zeta
            s = 1 + 2 * mpmath.fsum(wx * cos(th * x) for x, wx in enumerate(w, start=1))
            prod *= (s / norm) ** m
        return prod


def kernel_w(t: int, U: int, zeta) -> mpmath.mpf:
    """W_{t,U}(ζ) = Σ_{n=t}^{U} cos(nζ) (closed form; W(0) = U − t + 1)."""
    if zeta == 0:
        return mpmath.mpf(U - t + 1)
    return (
        mpmath.cos(t * zeta)
        + mpmath.cos(U * zeta)
        + mpmath.cot(zeta / 2) * (mpmath.sin(U * zeta) - mpmath.sin(t * zeta))
    ) / 2


def node_zeta(j: int, N: int):
    return 2 * mpmath.pi * j / N


def tail_range(phis: Sequence, pl: PaperPlan, t: int) -> mpmath.mpf:
    """P[t ≤ Y ≤ U] ≈ (1/N)[φW(0) + 2 Σ_{0<j<N/2} φW(ζ_j) + φW(π)] from φ at nodes j = 0..N/2."""
    N, U = pl.N, pl.U
    if t > U:
        return mpmath.mpf(0)
    acc = []
    for j, ph in enumerate(phis):
        wgt = 1 if (j == 0 or 2 * j == N) else 2
        acc.append(wgt * ph * kernel_w(t, U, node_zeta(j, N)))
    return mpmath.fsum(acc) / N


def thresholds(comp, eps: str | Fraction) -> tuple[int, int]:
    """k₁ = ⌊Lε − C⌋ + 1 and k₂ = k₁ + 2C, with ε taken exactly (decimal string or Fraction)."""
    e = Fraction(eps)
    lat = comp.lattice
    x = lat.scale * e - Fraction(lat.two_c, 2)
    k1 = math.floor(x) + 1
    return k1, k1 + lat.two_c


def delta_curve(comp, eps_values: Iterable, tol: float = 1e-35, dps: int = 50, round_to: int = 1, terms: str = "paper"):
    """The paper's δ(ε) = P[Y ≥ k₁] − e^ε P[Y ≥ k₂], dense over all nodes (small problems only).

    Returns (list of mpf δ values, plan, seconds).  φ is evaluated once per node and reused for
    every ε (as in the paper's code).
    """
    eps_values = list(eps_values)
    with mpmath.workdps(dps):
        t0 = time.perf_counter()
        pl = plan(groups_of(comp), tol, round_to)
        phi = PaperPhi(groups_of(comp), terms)
        phis = [phi(node_zeta(j, pl.N)) for j in range(pl.half_nodes)]
        out = []
        for e in eps_values:
            k1, k2 = thresholds(comp, e)
            em = mpmath.mpf(Fraction(e).numerator) / Fraction(e).denominator
            out.append(tail_range(phis, pl, k1) - mpmath.exp(em) * tail_range(phis, pl, k2))
        return out, pl, time.perf_counter() - t0


def time_per_node(
    comp, tol: float, dps: int, n_sample: int = 3, n_kernels: int = 2, terms: str = "paper", round_to: int = 10_000
):
    """Measured seconds per node for φ (direct sum) and per W-kernel evaluation, on sample nodes.

    Returns a dict with the plan, the per-node φ time, the per-(node, threshold) W time and the
    number of series terms per node.  ``n_sample`` nodes evenly spread over (0, π) are timed.
    """
    groups = groups_of(comp)
    with mpmath.workdps(dps):
        pl = plan(groups, tol, round_to)
        t0 = time.perf_counter()
        phi = PaperPhi(groups, terms)
        t_setup = time.perf_counter() - t0
        js = [max(1, (i + 1) * (pl.half_nodes - 1) // (n_sample + 1)) for i in range(n_sample)]
        t0 = time.perf_counter()
        vals = [phi(node_zeta(j, pl.N)) for j in js]
        t_phi = (time.perf_counter() - t0) / len(js)
        ks = [1 + i * max(1, pl.U // (n_kernels + 1)) for i in range(n_kernels)]
        t0 = time.perf_counter()
        for j in js:
            z = node_zeta(j, pl.N)
            for k in ks:
                kernel_w(k, pl.U, z)
        t_w = (time.perf_counter() - t0) / (len(js) * len(ks))
    return {
        "plan": pl,
        "t_phi_per_node": t_phi,
        "t_w_per_eval": t_w,
        "t_setup": t_setup,
        "terms_per_node": phi.terms_per_node,
        "sample_nodes": js,
        "sample_values": vals,
    }


def extrapolate(t_phi: float, t_w: float, n_nodes: int, n_thresholds: int, setup: float = 0.0) -> float:
    """Dense cost: every node evaluates φ once and W once per threshold."""
    return setup + n_nodes * (t_phi + n_thresholds * t_w)
