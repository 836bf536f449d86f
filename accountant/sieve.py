"""The sieve: which trapezoid nodes can matter.

The integrand of :mod:`accountant.quadrature` is a product of factors g_k(ζ) = φ_k(b_k ζ)^{m_k},
each bounded by 1 in modulus and peaked at ζ ∈ (2π/b_k)Z.  If for *some* component the node
lies farther than r_k = θ_k/b_k from every peak of that component, then |product| < threshold
(:func:`accountant.theta.peak_halfwidth`), and the node is pruned; the total contribution of all
pruned nodes is bounded in :mod:`accountant.bounds`.

Instead of scanning all N nodes (as in the code of arXiv 2606.29835; docs/method.md §3.5), we
enumerate *peak windows*: start from the windows of the component with the fewest peaks and
intersect them with the windows of the next component, and so on.  Cost is proportional to
the number of surviving windows, not to N.

Node indices are j ∈ [0, N/2] (ζ_j = 2πj/N); the integrand at −ζ is the complex conjugate of
the integrand at ζ, so the half range suffices.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from .lattice import sub_gaussian_sd
from .theta import peak_halfwidth

__all__ = ["SieveComponent", "SieveTooWide", "direct_kept_estimate", "sieve_nodes"]


class SieveTooWide(RuntimeError):
    """The sieve would keep more nodes than allowed: the exact lattice is too fine here."""


#: components whose windows cover more than this fraction of the circle are not used to sieve
#: (they would fragment the window list without pruning much).
MAX_COVERAGE = 0.5
#: :func:`product_filter` orders the factors by their mean log bound on a sample of this many
#: nodes when it is given more than ``ORDER_SAMPLE_MIN`` nodes.
ORDER_SAMPLE = 2048
ORDER_SAMPLE_MIN = 20_000
#: :func:`sieve_nodes` builds candidate peak windows in numpy chunks of at most this many.
WINDOW_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class SieveComponent:
    """A sieving factor: integer weight b and half-width θ_r (in θ = bζ units)."""

    b: int
    halfwidth: float


def sieve_nodes(components: list[SieveComponent], n_nodes: int, max_kept: int = 20_000_000) -> np.ndarray:
    """Indices j ∈ [0, N/2] of nodes ζ_j = 2πj/N that lie in a window of *every* component.

    Args:
        components: sieving components (those for which a finite half-width exists).
        n_nodes: N, the number of trapezoid nodes on [0, 2π).
        max_kept: safety limit; raises ``RuntimeError`` if more nodes would be kept.

    Returns:
        Sorted ``int64`` array of node indices (all of [0, N/2] when nothing sieves).
    """
    found = _sieve_windows(components, n_nodes, max_kept)
    if found is None:
        return np.zeros(0, dtype=np.int64)
    first_j, sizes, total = found
    half = int(n_nodes) // 2
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    nodes = np.repeat(first_j, sizes) + (np.arange(total, dtype=np.int64) - np.repeat(starts, sizes))
    # windows come out sorted and disjoint (intersections of sorted disjoint intervals with
    # sorted disjoint windows); fall back to a sort/unique only if that ever fails
    if len(nodes) > 1 and not bool(np.all(nodes[1:] > nodes[:-1])):
        nodes = np.unique(nodes)
    return nodes[(nodes >= 0) & (nodes <= half)]


def sieve_count(
    components: list[SieveComponent], n_nodes: int, max_kept: int = 20_000_000, *, stop_at: int | None = None
) -> int:
    """``len(sieve_nodes(components, n_nodes, max_kept))`` without listing the nodes (planning: the
    windows' sizes summed; they are disjoint and inside [0, N/2]).

    ``stop_at``: the sieve stops as soon as the nodes left in its windows are at most ``stop_at`` and
    returns that number — an upper bound of the count, since each component only intersects the windows
    (a planner asking "at most T?" gets the same answer, without sieving the remaining components).
    The exact count whenever it is above ``stop_at``."""
    found = _sieve_windows(components, n_nodes, max_kept, stop_at)
    return 0 if found is None else found[2]


def _window_sizes(lo: np.ndarray, hi: np.ndarray):
    first_j, last_j = np.ceil(lo).astype(np.int64), np.floor(hi).astype(np.int64)
    sizes = np.maximum(last_j - first_j + 1, 0)
    return first_j, sizes, int(sizes.sum())


def _sieve_windows(components: list[SieveComponent], n_nodes: int, max_kept: int, stop_at: int | None = None):
    """The kept windows of :func:`sieve_nodes`: ``(first node, node count, total)`` per window, or
    ``None`` when no node is kept; with ``stop_at`` those of the first sieving stage that leaves at
    most ``stop_at`` nodes (see :func:`sieve_count`)."""
    N = int(n_nodes)
    half = N // 2
    usable = [c for c in components if c.halfwidth / math.pi <= MAX_COVERAGE]
    usable.sort(key=lambda c: c.b)
    # intervals in node-index units, as (lo, hi) float arrays; node j kept iff lo <= j <= hi
    lo, hi = np.array([0.0]), np.array([float(half)])
    max_windows = max_kept // 4
    for comp in usable:
        if stop_at is not None and (found := _window_sizes(lo, hi))[2] <= stop_at:
            return found
        b = comp.b
        spacing = N / b  # peak spacing in node units
        h = comp.halfwidth * N / (2.0 * math.pi * b)  # half-width in node units
        h = h * (1.0 + 1e-12) + N * 1e-13 + 1e-9  # widen: float rounding keeps more, never fewer
        p_lo = np.ceil((lo - h) / spacing)
        p_hi = np.floor((hi + h) / spacing)
        big = float(np.max(np.abs(np.concatenate([p_lo, p_hi])))) >= 2.0**52
        if big or float(np.max(p_hi - p_lo)) >= WINDOW_CHUNK:  # huge indices or one huge interval
            lo, hi = _windows_exact(lo, hi, N, b, h, spacing, max_windows)
            continue
        counts = np.maximum(p_hi - p_lo + 1, 0.0).astype(np.int64)
        # in chunks of at most WINDOW_CHUNK candidate windows, the kept ones counted as they
        # come: one interval can hold ~b/2 peaks (10⁹ for the first component of a fine
        # lattice), whose list would exhaust memory
        cum = np.cumsum(counts)
        if int(cum[-1]) < WINDOW_CHUNK:  # the usual case: one chunk
            cuts = [0, len(lo)]
        else:
            bounds = np.searchsorted(cum, np.arange(WINDOW_CHUNK, int(cum[-1]), WINDOW_CHUNK))
            cuts = [0, *np.unique(bounds).tolist(), len(lo)]
        out_lo, out_hi, kept = [], [], 0
        for i0, i1 in itertools.pairwise(cuts):
            if i1 <= i0:
                continue
            cnt = counts[i0:i1]
            first = cum[i0:i1] - cnt - (cum[i0 - 1] if i0 else 0)  # each interval's first candidate
            # peak index of each candidate: its interval's p_lo plus its rank there (integers, exact)
            p = np.arange(int(cnt.sum()), dtype=np.int64) + np.repeat(p_lo[i0:i1] - first, cnt)
            # |p| < 2^52: p exact; c carries ≤ 2 roundings (≤ N·2^-52), far inside the widening
            c = p * N / b
            a, z = np.maximum(np.repeat(lo[i0:i1], cnt), c - h), np.minimum(np.repeat(hi[i0:i1], cnt), c + h)
            ok = np.floor(z) >= np.ceil(a)
            kept += int(ok.sum())
            if kept > max_windows:
                raise SieveTooWide(f"sieve: more than {max_windows} peak windows; composition too wide for the sieve")
            out_lo.append(a[ok])
            out_hi.append(z[ok])
        lo = np.concatenate(out_lo) if out_lo else np.zeros(0)
        hi = np.concatenate(out_hi) if out_hi else np.zeros(0)
        if not len(lo):
            break
    if not len(lo):
        return None
    first_j, sizes, total = _window_sizes(lo, hi)
    if total > max_kept:
        raise SieveTooWide(f"sieve keeps {total} nodes (> max_kept={max_kept}); composition too wide for the sieve")
    return first_j, sizes, total


def _windows_exact(lo, hi, N: int, b: int, h: float, spacing: float, max_windows: int):
    """The intersection step of :func:`sieve_nodes` with exact integer peak indices (for peak
    indices beyond 2^52, where floats cannot enumerate consecutive integers)."""
    new_lo, new_hi = [], []
    for lo_i, hi_i in zip(lo.tolist(), hi.tolist()):
        for p in range(math.ceil((lo_i - h) / spacing), math.floor((hi_i + h) / spacing) + 1):
            c = p * N / b
            a, z = max(lo_i, c - h), min(hi_i, c + h)
            if math.floor(z) >= math.ceil(a):
                new_lo.append(a)
                new_hi.append(z)
                if len(new_lo) > max_windows:
                    raise SieveTooWide(
                        f"sieve: more than {max_windows} peak windows; composition too wide for the sieve"
                    )
    return np.array(new_lo, dtype=float), np.array(new_hi, dtype=float)


def mulmod(nodes: np.ndarray, b: int, N: int) -> np.ndarray:
    """b·j mod N for every node j ∈ [0, N), exactly, as ``int64`` (N < 2^62).

    In int64 directly when b·j < 2^62; else by Horner's rule over c-bit digits of j,
    r ← (r·2^c + b·digit) mod N, where every intermediate stays below 2^62 (c = 61 − bits(N)),
    or in Python integers when N ≥ 2^57 leaves no digit width.
    """
    N = int(N)
    b %= N
    nodes = np.asarray(nodes)
    if len(nodes) == 0 or int(np.max(nodes)) * b < 2**62:
        return (nodes.astype(np.int64) * b) % N
    c = 61 - N.bit_length()
    if c < 4:
        return np.array([(int(j) * b) % N for j in nodes.tolist()], dtype=np.int64)
    j = nodes.astype(np.int64)
    digits = []
    while True:
        digits.append(j & ((1 << c) - 1))
        j = j >> c
        if not j.any():
            break
    r = np.zeros(len(nodes), dtype=np.int64)
    for d in reversed(digits):
        r = ((r << c) + b * d) % N
    return r


def log_bound_at_nodes(nodes: np.ndarray, n_nodes: int, b: int, sigma2: float, mult: int) -> np.ndarray:
    """Upper bound on m·log|φ_c(b ζ_j)| at the nodes (vectorised Poisson bound, any real shift c).

    Same bound as :func:`accountant.theta.log_abs_cf_bound`, evaluated for many nodes at once,
    with a relative safety margin of 1e-9 so that float rounding can only over-estimate.
    """
    s2 = float(sigma2)
    den_tail = 2.0 * sum(math.exp(-2.0 * math.pi**2 * s2 * j * j) for j in range(1, 8))
    if den_tail >= 0.5:
        return np.zeros(len(nodes))
    N = int(n_nodes)
    r = mulmod(nodes, b, N)  # exact
    theta = 2.0 * math.pi * r.astype(np.float64) / N  # (r ≥ 2^53 rounded once: far inside the margin)
    theta = np.where(theta > math.pi, theta - 2.0 * math.pi, theta)
    two_pi = 2.0 * math.pi
    # j = -1, 0, 1 exactly; |j| >= 2 bounded: (2|j|-1)π <= |θ + 2πj| and consecutive terms
    # shrink by at least e^{-8π²σ²}
    t0 = -s2 * theta**2 / 2.0
    tm = -s2 * (theta - two_pi) ** 2 / 2.0
    tp = -s2 * (theta + two_pi) ** 2 / 2.0
    log_rest = math.log(2.0) - s2 * (3.0 * math.pi) ** 2 / 2.0 - math.log(-math.expm1(-8.0 * math.pi**2 * s2))
    top = np.maximum(t0, np.maximum(tm, tp))
    lse = top + np.log(np.exp(t0 - top) + np.exp(tm - top) + np.exp(tp - top))
    val = np.logaddexp(lse, log_rest) - math.log1p(-den_tail)
    val = np.minimum(val, 0.0)
    val = val + 1e-9 * (1.0 + np.abs(val))
    return mult * np.minimum(val, 0.0) + 0.0


def product_filter(nodes: np.ndarray, n_nodes: int, groups, log_threshold: float, return_totals: bool = False):
    """Drop nodes where the *product* bound Π_k B_k(b_k ζ)^{m_k} is below the threshold.

    The window sieve prunes a node when one factor alone is below the threshold; this
    second pass prunes when all factors together are, which is what the pruning bound of
    :mod:`accountant.bounds` needs (|G(λ+iζ)| ≤ G(λ)·Π_k B_k).  ``groups`` have ``b``,
    ``sigma2`` and ``mult``.  With ``return_totals`` also returns, per kept node, the upper
    bound Σ_k m_k log B_k on log |Π_k φ_k| (zeros — the trivial bound — if not computed).
    """
    if len(nodes) == 0:
        return (nodes, np.zeros(0)) if return_totals else nodes
    # a node is dropped as soon as the running sum of (non-positive) log-bounds falls below
    # the threshold, so later factors see ever fewer nodes: most pruning factors first — by
    # their mean bound on an evenly spaced sample of the nodes when there are many, else the
    # sharpest (largest m·σ²) first
    order = sorted(groups, key=lambda g: -g.mult * float(g.sigma2))
    if len(nodes) > ORDER_SAMPLE_MIN:
        sample = nodes[:: len(nodes) // ORDER_SAMPLE]
        mean = {id(g): float(np.mean(log_bound_at_nodes(sample, n_nodes, g.b, float(g.sigma2), g.mult))) for g in order}
        order.sort(key=lambda g: mean[id(g)])
    total = np.zeros(len(nodes))
    for g in order:
        total += log_bound_at_nodes(nodes, n_nodes, g.b, float(g.sigma2), g.mult)
        keep = total >= log_threshold
        if not bool(keep.all()):
            nodes, total = nodes[keep], total[keep]
        if len(nodes) == 0:
            break
    return (nodes, total) if return_totals else nodes


def direct_kept_estimate(groups, log_threshold: float = -95.0, *, stop_at: int | None = None) -> int:
    """Planning only: window-sieve node count of the direct trapezoid at a typical threshold.

    Uses N = 16·(sub-Gaussian standard deviation) nodes and the pruning threshold of a 1e-35
    target; the count measures how many peak clusters the integrand has, which — not N —
    drives the cost of :class:`accountant.quadrature.TailEngine`.  ``stop_at``: as in
    :func:`sieve_count` (an upper bound when at most ``stop_at``, else the count).
    """
    sd = sub_gaussian_sd(groups)
    comps = []
    for g in groups:
        hw = peak_halfwidth(float(g.sigma2), g.mult, log_threshold)
        if hw is not None:
            comps.append(SieveComponent(g.b, hw))
    try:
        return sieve_count(comps, max(64, int(16 * sd)), max_kept=2_000_000, stop_at=stop_at)
    except SieveTooWide:
        return 10**9
