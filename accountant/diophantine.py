"""Near-peak nodes by lattice reduction: the sieve for lattices too fine to window.

The trapezoid rule of :mod:`accountant.quadrature` needs every node ζ_j = 2πj/N at which the
product bound Σ_g m_g log B_g(b_g ζ_j) (:func:`accountant.theta.log_abs_cf_bound`) reaches the
pruning threshold t.  :func:`accountant.sieve.sieve_nodes` finds them by intersecting peak
windows component after component, at a cost proportional to the windows of the first
component: about b_min of them, hopeless when the Bézout scale is 10¹⁴ (PL94 persons, an
optimizer's reallocated proposal), although the nodes that survive are few — the weights are
incommensurable, so the factors are near their peaks together only near ζ = 0 and at the few
simultaneous Diophantine approximations of the weights.

This module finds those nodes as the points of a lattice in an ellipsoid:

1. *A quadratic minorant per component* (:func:`quadratic_minorant`): log B_σ(θ) ≤ c − A_σ θ²
   on [0, π], with c = :data:`MINORANT_SLACK`.  B_σ is decreasing on [0, π], so on a grid
   θ_0 = 0 < θ_1 < … < θ_n = π the choice A_σ = min_i (c − log B_σ(θ_{i−1}))/θ_i² is valid on
   each cell [θ_{i−1}, θ_i] and hence everywhere.
2. *An ellipsoid.*  With θ_g(j) = 2π·‖b_g j/N‖ (distance to the nearest integer) and
   W_g = m_g A_g, a node j with Σ_g m_g log B_g(θ_g(j)) ≥ t satisfies
   Σ_g W_g θ_g(j)² ≤ R := Σ_g m_g c − t.  Writing θ_g = 2π|b_g j/N − p_g| for the nearest
   integer p_g, the vector x = (j, p_1, …, p_K) ∈ Z^{1+K} then lies in the ellipsoid
   Q(x) = R (2j/N)² + Σ_g 4π² W_g (b_g j/N − p_g)² ≤ 2R  whenever |j| ≤ N/2.
3. *Enumeration.*  The lattice is reduced by LLL (Lenstra, Lenstra, Lovász, Math. Ann. 261,
   1982; FLINT's ``fmpz_mat.lll`` on the basis scaled by 2^:data:`BASIS_BITS` and rounded, in
   exact integers) and the points of Q ≤ 2R are enumerated depth-first over the Gram–Schmidt
   coordinates (Fincke and Pohst, Math. Comp. 44, 1985; Schnorr and Euchner, Math. Program. 66,
   1994).  Every j found is reduced modulo N and folded into [0, N/2] (ζ and −ζ give
   conjugate integrand values).

The enumeration runs in floats on the reduced basis (its vectors are short, the Gram–Schmidt
norms moderate); the radius is enlarged by a relative :data:`RADIUS_MARGIN`, far above the
rounding of the scaled basis (2^−BASIS_BITS relative) and of the float Gram–Schmidt process, so
no point of the ellipsoid is missed.  The result is a *superset* of the nodes the threshold
keeps: the caller filters it with the exact product bound (:func:`accountant.sieve.product_filter`),
and the pruning bound of :mod:`accountant.bounds` covers every node left out (docs/method.md §3.5).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from flint import fmpz_mat

from .sieve import SieveTooWide
from .theta import log_abs_cf_bound, log_abs_cf_bounds

__all__ = ["ellipsoid_nodes", "enumeration_estimate", "quadratic_minorant"]

#: c of the minorant log B(θ) ≤ c − Aθ²: B(0) slightly exceeds 1 (its denominator is < 1), so a
#: minorant through the origin does not exist; c also absorbs the float rounding of log B.
MINORANT_SLACK = 1e-3
#: cells of the grid on which :func:`quadratic_minorant` checks the minorant (geometric in θ)
MINORANT_CELLS = 4000
#: the smallest positive grid point of :func:`quadratic_minorant`
MINORANT_THETA_MIN = 1e-8
#: the real basis is scaled by 2^BASIS_BITS (relative to √R; more for N beyond 2^50) and rounded for LLL
BASIS_BITS = 100
#: relative enlargement of the enumeration radius (covers every float rounding many times over)
RADIUS_MARGIN = 1e-6
#: a component whose largest contribution π²W is below this fraction of R is left out of the
#: ellipsoid: its coordinate admits several p_g per node (any |p_g − b_g j/N| ≤ √(2R)/(2π√W)),
#: which multiplies the lattice points per node, while it prunes little; the exact product
#: filter still uses it.  Measured on PL94 persons pairs (thresholds −103 and −150): 0.05 —
#: [M1, M16] over 4e6 enumeration steps; 0.5 — 2.9e5 candidates; 1 — 4.6e5;
#: 2 — 6.1e5; 8 — 1.1e6 (the same 25,258 nodes kept by the filter each time).
MIN_PRUNING_FRACTION = 1.0
#: default bound on the enumeration steps before :class:`SieveTooWide` is raised (as
#: ``EngineConfig.ellipsoid_max_visits``)
MAX_VISITS = 10_000_000


@functools.lru_cache(maxsize=4096)
def quadratic_minorant(sigma2: float) -> float:
    """A ≥ 0 with log B_σ(θ) ≤ :data:`MINORANT_SLACK` − Aθ² for θ ∈ [0, π], where B_σ is the
    Poisson bound on |φ_c(θ)| of a discrete Gaussian of variance σ² (any real shift c;
    :func:`accountant.theta.log_abs_cf_bound`).  0 when the bound is trivial.

    Valid because B_σ decreases on [0, π]: on a grid cell [θ_{i−1}, θ_i],
    log B(θ) ≤ log B(θ_{i−1}) ≤ c − Aθ_i² ≤ c − Aθ²; the log values are raised by
    1e-12·(1 + σ²θ²) against the rounding of the vectorised evaluation and A is shrunk by a
    relative 1e-9 against the rounding of the quotient.
    """
    s2 = float(sigma2)
    if log_abs_cf_bound(s2, math.pi) >= 0.0:
        return 0.0
    grid = np.concatenate([[0.0], np.geomspace(MINORANT_THETA_MIN, math.pi, MINORANT_CELLS)])
    logs = log_abs_cf_bounds(s2, grid[:-1]) + 1e-12 * (1.0 + np.abs(grid[:-1]) ** 2 * s2)
    a = float(np.min((MINORANT_SLACK - logs) / grid[1:] ** 2))
    return max(0.0, a * (1.0 - 1e-9))


def _components(groups, N: int, log_threshold: float) -> tuple[list[tuple[int, float]], float]:
    """((b_g mod N, W_g) of the components in the ellipsoid, R)."""
    weights = []
    for g in groups:
        a = quadratic_minorant(float(g.sigma2))
        if a > 0.0:
            weights.append((g.b % N, g.mult * a, g.mult))
    R = sum(m for _, _, m in weights) * MINORANT_SLACK - log_threshold
    if R <= 0:
        return [], R
    kept = [(b, w) for b, w, _ in weights if math.pi**2 * w >= MIN_PRUNING_FRACTION * R]
    return kept, R


def _reduced_basis(comps: list[tuple[int, float]], N: int, R: float) -> tuple[np.ndarray, list[int]]:
    """LLL-reduced basis of the ellipsoid's lattice (rows, floats, in the coordinates where Q is
    the squared norm) and, per row, its j-coordinate (exact integers)."""
    dim = len(comps) + 1
    # the j-row is rounded to integers: an error ≤ 1/2 per unit of j, i.e. ≤ N·2^−bits relative to
    # √R over |j| ≤ N, kept at 2^−BASIS_BITS/2 or below whatever N is
    bits = max(BASIS_BITS, N.bit_length() + BASIS_BITS // 2)
    scale = 2.0**bits / math.sqrt(R)
    rows = [[0] * dim for _ in range(dim)]
    # rows[0]: the generator of j; rows[k]: the generator of p_k (coordinate k only)
    rows[0][0] = (2 ** (bits + 1) + N // 2) // N  # 2√R/N · scale, scale·√R = 2^bits
    for k, (b, w) in enumerate(comps, start=1):
        cs = round(2.0 * math.pi * math.sqrt(w) * scale)  # 2π√W_g · scale, one integer for both rows
        rows[0][k] = (2 * cs * b + N) // (2 * N)  # round(cs·b/N), exactly
        rows[k][k] = -cs
    reduced, transform = fmpz_mat(rows).lll(True)  # (transform=True)
    basis = np.array([[float(int(reduced[i, j])) for j in range(dim)] for i in range(dim)]) / scale
    j_coord = [int(transform[i, 0]) for i in range(dim)]
    return basis, j_coord


def _enumerate(basis: np.ndarray, j_coord: list[int], radius2: float, max_visits: int, N: int) -> np.ndarray:
    """The j-coordinates Σ_i z_i·j_coord[i] of the integer vectors z with ‖z·basis‖² ≤ radius2,
    reduced mod N and folded into [0, N/2] (sorted, distinct; ``int64``, N < 2^62): depth-first
    over the Gram–Schmidt coordinates (the last basis vector first); at level 0 every admissible
    z_0 of the interval is taken at once, as one progression."""
    dim = basis.shape[0]
    r = np.linalg.qr(basis.T, mode="r")  # basis.T = Q·r: Gram–Schmidt norms |r_ll|, μ_il = r_li/r_ll
    mu = (r / np.diag(r)[:, None]).T
    b2 = np.diag(r) ** 2
    z = np.zeros(dim)
    chunks: list[np.ndarray] = []
    step = j_coord[0] % N
    visits = 0

    def interval(i: int, partial: float) -> tuple[float, int, int]:
        center = -float(np.dot(mu[i + 1 :, i], z[i + 1 :])) if i + 1 < dim else 0.0
        rem = radius2 - partial
        if rem < 0:
            return center, 1, 0
        w = math.sqrt(rem / b2[i]) * (1.0 + 1e-12) + 1e-9
        return center, math.ceil(center - w), math.floor(center + w)

    centers = [0.0] * dim
    c, lo, hi = interval(dim - 1, 0.0)
    centers[dim - 1] = c
    stack = [(dim - 1, 0.0, lo, hi)]  # (level, sum of squares above it, next z, last z)
    while stack:
        i, partial, lo, hi = stack.pop()
        if lo > hi:
            continue
        if i == 0:  # every z_0 of the interval: the j-coordinates form a progression
            base = (sum(int(zl) * t for zl, t in zip(z[1:].tolist(), j_coord[1:])) + lo * step) % N
            if (hi - lo) * step + base < 2**62:
                chunks.append(base + step * np.arange(hi - lo + 1, dtype=np.int64))
            else:
                chunks.append(np.array([base + step * t for t in range(hi - lo + 1)], dtype=object) % N)
            visits += 1 + (hi - lo) // 8  # (a set insertion costs about an eighth of a step)
            continue
        stack.append((i, partial, lo + 1, hi))
        visits += 1
        if visits > max_visits:
            raise SieveTooWide(f"lattice sieve: more than {max_visits} enumeration steps; composition too wide")
        z[i] = lo
        p = partial + (lo - centers[i]) ** 2 * b2[i]
        if p > radius2:
            continue
        c, lo2, hi2 = interval(i - 1, p)
        centers[i - 1] = c
        stack.append((i - 1, p, lo2, hi2))
    if not chunks:
        return np.zeros(0, dtype=np.int64)
    js = np.concatenate(chunks).astype(np.int64) % N
    return np.unique(np.minimum(js, N - js))


def _log_points_estimate(basis: np.ndarray, radius2: float) -> float:
    """log of the lattice points the enumeration will meet: max_k V_k(r)/Π_{l<k}‖b*_l‖, the
    Gaussian heuristic for the ball of radius r = √radius2 in the span of the first k reduced
    vectors.  The enumeration is centred on a lattice point (0), so every short sublattice is met
    in full — the average-case tree size Σ_i V_{d−i}(r)/Π_{l≥i}‖b*_l‖ is below 1 for sums that
    keep 10⁵ nodes and cannot tell them from sums that keep 10¹⁰."""
    norms = np.abs(np.diag(np.linalg.qr(basis.T, mode="r")))
    if not bool(np.all(np.isfinite(norms) & (norms > 0))):  # a degenerate float basis: no estimate
        return math.inf
    best = 0.0
    log_det = 0.0
    for k in range(1, len(norms) + 1):
        log_det += math.log(norms[k - 1])
        best = max(best, k / 2 * math.log(math.pi * radius2) - math.lgamma(k / 2 + 1) - log_det)
    return best


def enumeration_estimate(groups, n_nodes: int, log_threshold: float) -> float:
    """Planning only: about how many lattice points :func:`ellipsoid_nodes` will enumerate for
    these components, N and threshold (:func:`_log_points_estimate`; a few ms after the LLL
    reduction).  Measured at N = 16·sd, log threshold −95 (log of the estimate): PL94 persons
    pairs 8.6–13.0 (the [M1, M16] enumeration meets 3.7e5 points: log 12.8); DHC units pairs
    22–32 and a 1/10⁵-grid what-if of DHC persons 24.7 (enumerations past 4e6 steps); four
    unrelated components at scale 6.7e12: 25.2."""
    N = int(n_nodes)
    comps, R = _components(groups, N, log_threshold)
    if R <= 0:
        return 0.0
    if not comps:
        return float(N // 2 + 1)
    basis, _ = _reduced_basis(comps, N, R)
    return math.exp(min(700.0, _log_points_estimate(basis, 2.0 * R)))


def ellipsoid_nodes(groups, n_nodes: int, log_threshold: float, max_visits: int = MAX_VISITS) -> np.ndarray:
    """A superset of the nodes j ∈ [0, N/2] whose product bound Σ_g m_g log B_g(b_g ζ_j) is at
    least ``log_threshold`` (ζ_j = 2πj/N), found as lattice points of an ellipsoid (module
    docstring).  Sorted, distinct ``int64`` array.

    Raises :class:`~accountant.sieve.SieveTooWide` when N ≥ 2^57 (node indices and residues are
    int64 downstream), when :func:`_log_points_estimate` exceeds ``max_visits``, or after
    ``max_visits`` enumeration steps.
    """
    N = int(n_nodes)
    comps, R = _components(groups, N, log_threshold)
    half = N // 2
    if R <= 0:  # the threshold is above every bound: only … nothing can reach it
        return np.zeros(0, dtype=np.int64)
    if not comps:
        if half + 1 > max_visits:
            raise SieveTooWide("lattice sieve: no component prunes; composition too wide")
        return np.arange(half + 1, dtype=np.int64)
    if N >= 2**57:  # node indices and residues are int64 downstream (sieve.mulmod)
        raise SieveTooWide(f"lattice sieve: N = {N:.3g} nodes is beyond 2^57")
    basis, j_coord = _reduced_basis(comps, N, R)
    radius2 = 2.0 * R * (1.0 + RADIUS_MARGIN) + RADIUS_MARGIN
    if _log_points_estimate(basis, radius2) > math.log(max_visits):  # fail fast: no structure to use
        raise SieveTooWide(f"lattice sieve: the enumeration would take more than {max_visits} steps")
    return _enumerate(basis, j_coord, radius2, max_visits, N)
