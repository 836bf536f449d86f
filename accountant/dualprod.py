"""The tilted generating function G(λ + iζ) at many trapezoid nodes, by the Poisson-dual series.

G(λ + iζ_j) = Π_g [θ₃(z_g, τ_g)/θ₃(0, τ_g)]^{m_g},  z_g = b_g j/N − i b_g λ/(2π),
τ_g = i/(2πσ_g²)  (:mod:`accountant.quadrature`, :mod:`accountant.theta`).

Poisson summation gives, with a_g = 2π²σ_g² and D_g = Σ_m e^{−a_g m²} = θ₃(0, τ_g)/√(2πσ_g²),

    θ₃(z, τ_g)/θ₃(0, τ_g) = D_g^{−1} Σ_m exp(−a_g (z − m)²).

Write b_g j ≡ r_g (mod N) with r_g ∈ (−N/2, N/2] and w_g = r_g/N − i b_g λ/(2π) (= z_g minus
the nearest integer).  The m = 0 term of the shifted series is exp(−a_g w_g²); the others are
bounded relative to it, for x = |r_g|/N ≤ 1/2, by

    |Σ_{k≠0} exp(−a_g((w_g − k)² − w_g²))| = |Σ_{k≠0} exp(−a_g(k² − 2k w_g))|
        ≤ 2 e^{−a_g(1 − 2x)} / (1 − e^{−2a_g}) =: ε_g

(|e^{−a(k² − 2kw)}| = e^{−a(k² − 2k Re w)}, and k(k − 2x) grows by ≥ 2 per step in |k|).  At a
node near every factor's peak (what the sieve keeps) x is small and, for σ² ≳ 8, ε_g is far
below the working precision.  The product of the leading terms of all such *dual* factors is a
single exponential whose exponent is exact integer arithmetic:

    Σ_g m_g(−a_g w_g²) = (λ²/2)·C/Q − 2π²·A/(Q N²) + i·2πλ·B/(Q N),

    A = Σ m_g P_g r_g²,  B = Σ m_g P_g b_g r_g,  C = Σ m_g P_g b_g²,   P_g = σ_g² Q ∈ ℤ

(Q = common denominator of the σ_g²).  So each node costs one complex exponential instead of one
Arb theta evaluation per distinct component, and the dual factors' truncation enters as one
complex ball of relative radius e^{Σ m_g ε_g} − 1 ⊇ |Π(1 + η_g)^{m_g} − 1| (|η_g| ≤ ε_g).  Factors
whose ε_g would not be negligible at a node (small σ², or a node far from that factor's peak)
are evaluated with ``acb.modular_theta`` as before.  Everything is Arb ball arithmetic; ε_g is
evaluated in floating point with a relative safety factor of 2 (a few roundings of exp).
Method context: Su, Su & Wang, arXiv 2606.29835 (the theta-function form of the characteristic
functions); the dual series is the modular transformation θ₃(z, τ) ↔ θ₃(z/τ, −1/τ).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from flint import acb, acb_poly, arb, arb_poly, ctx, fmpq, fmpz

from .sieve import mulmod

__all__ = ["DualProduct"]

#: a factor is summed in the exponent at a node only if its relative truncation ε_g is below
#: 2^(−bits) / (this many times the number of components): then the whole ball radius stays
#: below the working precision.
DUAL_MARGIN = 64.0
#: longest chain of recurrence steps (consecutive nodes) before fresh exponentials.
RECURRENCE_MAX = 8


class DualProduct:
    """G(λ + iζ_j) for a fixed list of components (σ², b, multiplicity); see module docstring."""

    def __init__(self, groups: Sequence):
        self.groups = tuple(groups)
        q = 1
        for g in self.groups:
            q = q * g.sigma2.denominator // math.gcd(q, g.sigma2.denominator)
        self.Q = q
        self.P = [g.mult * (g.sigma2.numerator * (q // g.sigma2.denominator)) for g in self.groups]
        self.a = np.array([2.0 * math.pi**2 * float(g.sigma2) for g in self.groups])
        self.mult = np.array([g.mult for g in self.groups], dtype=np.float64)
        self.b = [g.b for g in self.groups]
        self.log_eps_den = np.array([math.log1p(-math.exp(-2.0 * a)) for a in self.a])
        self.total_mult = float(sum(g.mult for g in self.groups))

    def residues(self, nodes: np.ndarray, N: int) -> np.ndarray | None:
        """r[j, g] ≡ b_g·j (mod N), centred in (−N/2, N/2], exactly (:func:`accountant.sieve.mulmod`);
        ``None`` when N ≥ 2^62 (residues beyond int64)."""
        if len(nodes) == 0:
            return np.zeros((0, len(self.groups)), dtype=np.int64)
        if N >= 2**62:
            return None
        r = np.stack([mulmod(nodes, b, N) for b in self.b], axis=1)
        return np.where(2 * r > N, r - N, r)

    def dual_mask(self, r: np.ndarray, N: int, bits: int) -> tuple[np.ndarray, np.ndarray]:
        """(mask of the factors summed in the exponent, per node log of 2·Σ m_g ε_g over them;
        −inf where no factor is dual).  The factor 2 covers the float rounding of ε_g."""
        x = np.abs(r).astype(np.float64) / N
        log_eps = math.log(2.0) - self.a[None, :] * (1.0 - 2.0 * x) - self.log_eps_den[None, :]
        limit = -bits * math.log(2.0) - math.log(DUAL_MARGIN * self.total_mult)
        mask = log_eps <= limit
        terms = np.where(mask, np.log(self.mult)[None, :] + log_eps, -np.inf)
        with np.errstate(invalid="ignore"):
            log_sum = np.logaddexp.reduce(terms, axis=1) if terms.shape[1] else np.full(len(r), -np.inf)
        return mask, log_sum + math.log(2.0)

    def _dual_norm(self, thetas) -> arb:
        """Π_g D_g^{m_g}, D_g = θ₃(0, τ_g)/√(2πσ_g²): the dual terms are divided by it."""
        two_pi = 2 * arb.pi()
        dm_all = arb(1)
        for g, (_tau, th0) in zip(self.groups, thetas):
            s2 = arb(fmpq(g.sigma2.numerator, g.sigma2.denominator))
            dm_all *= (th0.real / (two_pi * s2).sqrt()) ** g.mult
        return dm_all

    def _series_terms(self, gi: int, bits: int) -> int:
        """Terms K of the dual series kept on each side for a factor that is not single-term:
        the rest is ≤ 2e^{−aK(K+1)}/(1 − e^{−2a}) relative to the leading term (|x| ≤ 1/2)."""
        a = float(self.a[gi])
        L = bits * math.log(2.0) + math.log(DUAL_MARGIN * self.total_mult) + 2.0
        K = 1
        while a * K * (K + 1) - math.log(2.0) + math.log(-math.expm1(-2.0 * a)) < L:
            K += 1
        return K

    def _values_direct(self, nodes: np.ndarray, N: int, lam: arb, thetas):
        """:meth:`values` with one exponential per node and one exponential, Horner evaluation
        and reciprocal per node and series factor (the reference for the recurrences).

        (G(λ + iζ_j) at ``nodes`` as acb, G(λ) as arb), or ``None`` when b_g·j could
        overflow int64.

        ``thetas`` are (τ_g, θ₃(0, τ_g)) at the current Arb precision, which the caller sets.
        Every factor contributes its leading dual term to one exponential; a factor whose
        single-term error ε_g is not negligible at a node is multiplied by its truncated dual
        series S_g = Σ_{|k|≤K} e^{−a k²} X^k (X = e^{2a w_g}) plus a ball for the rest.
        """
        bits = ctx.prec
        all_nodes = np.concatenate([np.asarray(nodes, dtype=np.int64), np.zeros(1, dtype=np.int64)])
        r = self.residues(all_nodes, N)
        if r is None:
            return None
        mask, log_eps = self.dual_mask(r, N, bits)
        pi = arb.pi()
        two_pi = 2 * pi
        dm_all = self._dual_norm(thetas)
        # per factor that needs its series somewhere: Horner polynomial Σ_k e^{−ak²} t^k, the
        # node-independent phase e^{−2i a y} (y = bλ/2π), 4π²σ²/N, and the truncation ball
        series = {}
        for gi in np.flatnonzero(~mask.all(axis=0)).tolist():
            g = self.groups[gi]
            s2 = arb(fmpq(g.sigma2.numerator, g.sigma2.denominator))
            a = 2 * pi * pi * s2
            K = self._series_terms(gi, bits)
            poly = acb_poly([(-a * k * k).exp() for k in range(K + 1)])
            phase = acb(0, -two_pi * s2 * g.b * lam).exp()
            tail_r = 2 * (-a * K * (K + 1)).exp() / (1 - (-2 * a).exp())
            series[gi] = (poly, phase, 2 * a / N, acb(arb(0, tail_r.upper()), arb(0, tail_r.upper())), g.mult)
        Qa = arb(fmpz(self.Q))
        c_re = lam * lam / (2 * Qa)
        c_a = 2 * pi * pi / (Qa * N * N)
        c_im = two_pi * lam / (Qa * N)
        P, b = self.P, self.b
        C = sum(p * bg * bg for p, bg in zip(P, b))
        out = []
        for row, mrow, le in zip(r.tolist(), mask.tolist(), log_eps.tolist()):
            A = B = 0
            for p, rg, bg in zip(P, row, b):
                A += p * rg * rg
                B += p * bg * rg
            val = acb(c_re * fmpz(C) - c_a * fmpz(A), c_im * fmpz(B)).exp() / dm_all
            if le > -math.inf:
                rad = (arb(le).exp()).expm1() * abs(val)  # |Π(1 + η_g)^{m_g} − 1| ≤ e^{Σ m ε} − 1
                val += acb(arb(0, rad.upper()), arb(0, rad.upper()))
            for gi, single in enumerate(mrow):
                if not single:
                    poly, phase, two_a_n, tail, m = series[gi]
                    X = (two_a_n * row[gi]).exp() * phase
                    S = poly(X) + poly(1 / X) - 1 + tail
                    val *= S if m == 1 else S**m
            out.append(val)
        g0 = out.pop()
        return out, g0.real

    def _series(self, gi: int, bits: int, lam: arb, N: int, step: int) -> tuple:
        """Group ``gi``'s truncated dual series S = 1 + Σ_k α_k (E^k + E^−k) + i Σ_k β_k (E^k − E^−k)
        as two polynomials in c = E + 1/E, with what :func:`_multiply_series` needs: 2a/N, the
        recurrence constants e^{±2a·step/N}, the ball for the dropped terms, the multiplicity."""
        pi = arb.pi()
        g = self.groups[gi]
        s2 = arb(fmpq(g.sigma2.numerator, g.sigma2.denominator))
        a = 2 * pi * pi * s2
        K = self._series_terms(gi, bits)
        phase = acb(0, -2 * pi * s2 * g.b * lam).exp()
        ph = acb(1)
        re_c, im_c = [arb(1)], [arb(0)]
        for k in range(1, K + 1):
            ph = ph * phase
            ck = (-a * k * k).exp()
            re_c.append(ck * ph.real)
            im_c.append(ck * ph.imag)
        # with c = E + 1/E: E^k + E^−k = s_k(c), E^k − E^−k = (E − 1/E)·u_k(c), where
        # s_0 = 2, s_1 = c, u_0 = 0, u_1 = 1 and both follow p_k = c·p_{k−1} − p_{k−2}
        cvar = arb_poly([0, 1])
        s_prev, s_cur = arb_poly([2]), cvar
        u_prev, u_cur = arb_poly([0]), arb_poly([1])
        re_poly, im_poly = arb_poly([1]), arb_poly([0])
        for k in range(1, K + 1):
            re_poly += re_c[k] * s_cur
            im_poly += im_c[k] * u_cur
            s_prev, s_cur = s_cur, cvar * s_cur - s_prev
            u_prev, u_cur = u_cur, cvar * u_cur - u_prev
        tail_r = (2 * (-a * K * (K + 1)).exp() / (1 - (-2 * a).exp())).upper()
        two_a_n = 2 * a / N
        step_e = (two_a_n * step).exp()
        return re_poly, im_poly, two_a_n, step_e, 1 / step_e, acb(arb(0, tail_r), arb(0, tail_r)), g.mult

    def values(self, nodes: np.ndarray, N: int, lam: arb, thetas):
        """(G(λ + iζ_j) at ``nodes`` as acb, G(λ) as arb), or ``None`` when b_g·j could
        overflow int64.

        ``thetas`` are (τ_g, θ₃(0, τ_g)) at the current Arb precision, which the caller sets.
        Every factor contributes its leading dual term to one exponential; a factor whose
        single-term error ε_g is not negligible at a node is multiplied by its truncated dual
        series S_g = Σ_{|k|≤K} e^{−ak²} X^k (X = e^{2a w_g}) plus a ball for the rest.

        Consecutive nodes j, j + 1 whose residues all advance by b_g (no wrap-around) are
        evaluated by exact recurrences instead of exponentials: the exponent is quadratic in j,
        so the leading term is multiplied by a ratio that is itself multiplied by the constant
        e^{−4π²C/(QN²)}; each series factor's E_g = e^{2a r_g/N} by the constant e^{2a b_g/N}.
        A recurrence restarts from fresh exponentials every :data:`RECURRENCE_MAX` nodes, so
        Arb's radius grows by at most that many roundings.  The series is evaluated in real
        arithmetic: S_g = c_0 + Σ_k c_k [Re φ^k (E^k + E^{−k}) + i Im φ^k (E^k − E^{−k})] with
        the node-independent phase φ = e^{−2πiσ²bλ}.
        """
        bits = ctx.prec
        nodes = np.asarray(nodes, dtype=np.int64)
        all_nodes = np.concatenate([nodes, np.zeros(1, dtype=np.int64)])
        r = self.residues(all_nodes, N)
        if r is None:
            return None
        mask, log_eps = self.dual_mask(r, N, bits)
        bm = np.array([b % N for b in self.b], dtype=np.int64)
        step_ok = _consecutive(nodes, r, bm, len(all_nodes))
        pi = arb.pi()
        two_pi = 2 * pi
        inv_dm = 1 / self._dual_norm(thetas)
        series = {gi: self._series(gi, bits, lam, N, int(bm[gi])) for gi in np.flatnonzero(~mask.all(axis=0)).tolist()}
        Qa = arb(fmpz(self.Q))
        c_a = 2 * pi * pi / (Qa * N * N)
        c_im = two_pi * lam / (Qa * N)
        P, b = self.P, self.b
        C = sum(p * bg * bg for p, bg in zip(P, b))
        const = (lam * lam / (2 * Qa)) * fmpz(C)
        # a step j → j + 1 moves every residue by δ_g = b_g mod N (step_ok): A gains
        # Σ P δ(2r + δ) = 2D + C1 with D = Σ P δ r, B gains C2 = Σ P b δ, and D gains C1
        delta = [int(x) for x in bm]
        C1 = sum(p * d * d for p, d in zip(P, delta))
        C2 = sum(p * bg * d for p, bg, d in zip(P, b, delta))
        kappa = (-2 * c_a * fmpz(C1)).exp()
        step_im = c_im * fmpz(C2)
        out = []
        val = ratio = None
        D = 0
        run = 0
        rows = r.tolist()
        chained = []  # per node: its leading term came from the recurrence (consecutive, no restart)
        for row, le, ok in zip(rows, log_eps.tolist(), step_ok.tolist()):
            if ok and run < RECURRENCE_MAX and val is not None:  # (val is set: node 0 never has step_ok)
                # log G_dual(j+1)/G_dual(j) = −c_a(2D_j + C1) + i c_im C2; the next ratio is
                # this one times e^{−2 c_a C1}
                ratio = acb(-c_a * fmpz(2 * D + C1), step_im).exp() if ratio is None else ratio * kappa
                val = val * ratio
                run += 1
            else:
                A = B = D = 0
                for p, rg, bg, d in zip(P, row, b, delta):
                    A += p * rg * rg
                    B += p * bg * rg
                    D += p * d * rg
                val = acb(const - c_a * fmpz(A), c_im * fmpz(B)).exp() * inv_dm
                ratio = None
                run = 0
                ok = False
            chained.append(ok)
            v = val
            if le > -math.inf:
                # |Π(1 + η_g)^{m_g} − 1| ≤ e^{x} − 1 ≤ 2x for x = Σ m ε ≤ 2^-bits (in the float
                # le = log(2x), already with its factor 2); |v| ≤ |Re v| + |Im v|
                rad = arb(math.exp(le)) * (abs(v.real) + abs(v.imag))
                rad = rad.upper()
                v = v + acb(arb(0, rad), arb(0, rad))
            out.append(v)
        for gi, factor in series.items():
            _multiply_series(out, factor, r[:, gi].tolist(), np.flatnonzero(~mask[:, gi]).tolist(), chained)
        g0 = out.pop()
        return out, g0.real


def _multiply_series(out: list, factor: tuple, col: list[int], rows: list[int], chained: list[bool]) -> None:
    """Multiply ``out[i]`` (i in ``rows``: the nodes where the group is not single-term) by the
    group's series factor S (:meth:`DualProduct._series`), the polynomials in c = E + 1/E
    evaluated in Arb's C code; E = e^{2a r/N} (r = ``col[i]``) by recurrence along the leading
    term's chains (``chained``)."""
    re_poly, im_poly, two_a_n, step_e, inv_step, tail, m = factor
    last = -2
    E = Ei = None
    for i in rows:
        if i == last + 1 and chained[i] and E is not None and Ei is not None:  # (E, Ei set at i − 1)
            E = E * step_e
            Ei = Ei * inv_step
        else:
            E = (two_a_n * col[i]).exp()
            Ei = 1 / E
        last = i
        c = E + Ei
        S = acb(re_poly(c), (E - Ei) * im_poly(c)) + tail
        out[i] = out[i] * (S if m == 1 else S**m)


def _consecutive(nodes: np.ndarray, r: np.ndarray, bm: np.ndarray, n_out: int) -> np.ndarray:
    """``step_ok[i]``: node i = node i−1 + 1 and every residue advanced by exactly b_g mod N (so
    the leading term of node i follows from node i−1's by the exact recurrence)."""
    step_ok = np.zeros(n_out, dtype=bool)
    if len(nodes) > 1:
        step_ok[1 : len(nodes)] = (np.diff(nodes) == 1) & np.all(
            np.diff(r[: len(nodes)], axis=0) == bm[None, :], axis=1
        )
    return step_ok
