"""Independent, certified brute-force reference for the accountant (tests only).

Nothing here imports ``accountant`` or ``optimizer`` (nor python-flint): the numbers come from
mpmath's low-level binary arithmetic (``mpmath.libmp``) with explicitly directed rounding and
exact integer / :class:`fractions.Fraction` arithmetic, so an error in the library cannot
leak into the reference.

Definitions
-----------
A *component* is a tuple ``(sigma2, shift, mult)`` (``mult`` may be omitted, default 1):
``mult`` iid copies of X ~ N_Z(0, σ²), the discrete Gaussian with pmf
p(x) = exp(−x²/(2σ²))/Z, Z = Σ_{x∈Z} exp(−x²/(2σ²)), and shift s ≥ 1 (the neighbouring
mechanism is N_Z(s, σ²)).  σ² is a positive Fraction (supported range 1/1000 … 1000).

Loss weights w_k = s_k/σ²_k; L = lcm(den w_k)/gcd(num w_k); b_k = L·w_k (coprime positive
integers); Y = Σ_k b_k·(X_k,1 + … + X_k,m_k); 2C = Σ_k m_k b_k s_k (an integer).

* tail(k)      = P[Y ≥ k]
* delta(ε)     = P[Y ≥ k1] − e^ε·P[Y ≥ k1 + 2C],  k1 = ⌊L·ε − C⌋ + 1 (exact in Fractions)
* trade-off    : vertices (α_j, β_j) = (P[Y ≥ j], P[Y ≥ 2C+1−j]), j ∈ Z, joined linearly;
                 on α_{j+1} ≤ α ≤ α_j,  β(α) = β_j + p_{2C−j}·(α_j − α)/p_j  (p_y = P[Y = y]).

Every public function returns a *certified enclosure* ``(lo, hi)`` of mpmath ``mpf`` numbers
(exact binary values, of the global ``mpmath.mp`` context) with lo ≤ truth ≤ hi.

How the error bound is obtained
-------------------------------
1. *One discrete Gaussian.*  The support is truncated to |x| ≤ R with the explicit bound

       T_R = Σ_{|x|>R} e^{−x²/(2σ²)} ≤ B_R = 2 e^{−(R+1)²/(2σ²)} / (1 − e^{−(R+1)/σ²})

   ((R+1+i)² ≥ (R+1)² + 2(R+1)i, then a geometric series).  Each e^{−x²/(2σ²)} is enclosed by
   rounding the rational argument and ``mpf_exp`` downwards / upwards and then widening the
   result by a relative 2^{−(prec−30)} (a margin of ~2^29 ulps, far above the few-ulp accuracy
   of mpmath's exp, so correctness does not rest on exp being correctly rounded).  With
   Z ≤ Z_hi = Σ_{|x|≤R} e_hi(x) + B_R (all sums rounded upwards), a(x) = e_lo(x)/Z_hi rounded
   down satisfies 0 ≤ a(x) ≤ p(x).  R is chosen so that B_R ≤ (budget) — note Z ≥ 1.
2. *Convolution.*  Masses are held in fixed point, as integers over 2^F (F ≈ log2(1/mass_tol)
   + log2(support) + 8 bits): the base masses are floor(a(x)·2^F).  Each convolution step
   (dist * law of b_k·X) is computed *exactly* in integer arithmetic — per residue class mod
   b_k, by Kronecker substitution into Python big integers (pack, multiply, unpack; slots
   wide enough that no coefficient overflows) — and each exact result is floored back to a
   multiple of 2^-F.  After each step, entries below share/len(dist) are dropped (at most a
   share of ``mass_tol`` per step).  Flooring, dropping and truncation only ever *remove*
   mass, hence the computed c_y satisfy 0 ≤ c_y ≤ P[Y = y] for every y.
3. *Missing mass.*  Since Σ_y P[Y = y] = 1 exactly, the non-negative measure P[Y = ·] − c has
   total mass exactly E = 1 − Σ_y c_y, which is computed *exactly* (the c_y are binary numbers
   summed as integers).  Therefore, for every k,

       Σ_{y≥k} c_y  ≤  P[Y ≥ k]  ≤  Σ_{y≥k} c_y + E  =  1 − Σ_{y<k} c_y,

   and c_y ≤ P[Y = y] ≤ c_y + E.  E collects the truncation of every factor (≈ Σ m_k B_R/Z),
   the pruning, and the fixed-point flooring; by construction
   E ≲ mass_tol (the budget is split evenly between truncation, dropping and flooring).
   Upper tails and lower tails (= complements, P[Y ≤ k−1] = 1 − P[Y ≥ k]) are
   both available as exact sums, so α close to 1 keeps full relative precision in ``beta``.
4. *Post-processing* (δ, β) is exact rational interval arithmetic on these end points and on
   an enclosure of e^ε; only the final end points are rounded outwards (to ``prec_bits`` bits).

The enclosure width is therefore about E ≈ mass_tol in absolute terms: with the default
mass_tol = 1e-120, tails of 1e-100 are resolved to ~20 significant digits.  Pass a smaller
mass_tol for smaller tails (cost grows like sqrt(log(1/mass_tol)) per factor).

The returned end points are exact binary numbers with up to ``prec_bits`` bits; do arithmetic
on them at a matching precision (``mpmath.workprec``) or exactly via :func:`as_fraction` — at
mpmath's default 53 bits, 1 − 1e-20 rounds to 1.

>>> from fractions import Fraction as F
>>> lo, hi = tail([(F(1, 3), 2, 2)], 5)
>>> mpmath.nstr(lo, 15), bool(0 <= hi - lo < 1e-120)
('3.23614262380578e-9', True)

Cost: a few ms for small cases; σ² = 1000 with m = 2 takes ~0.2 s (support ~2·10³).
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
from dataclasses import dataclass, field
from fractions import Fraction

import mpmath
from mpmath.libmp import (
    fone,
    from_int,
    from_man_exp,
    from_rational,
    fzero,
    mpf_add,
    mpf_div,
    mpf_exp,
    mpf_mul,
    mpf_sub,
)

__all__ = [
    "DEFAULT_MASS_TOL",
    "DEFAULT_PREC",
    "PMFEnclosure",
    "as_fraction",
    "beta",
    "delta",
    "delta_joint",
    "discrete_gaussian_enclosure",
    "exp_enclosure",
    "lattice",
    "lower_tail",
    "pmf_enclosure",
    "tail",
    "vertex",
]

#: working precision (bits) of all binary arithmetic.
DEFAULT_PREC = 800
#: default bound on the total missing mass E (absolute).
DEFAULT_MASS_TOL = 1e-120
#: exp results are widened by a relative 2^-(prec - EXP_SLACK_BITS).
EXP_SLACK_BITS = 30

_F, _C = "f", "c"  # round towards -inf / +inf


# ----------------------------------------------------------------------------- conversions
def _as_fraction(x) -> Fraction:
    """Exact rational value of an int, Fraction, decimal string, float or mpf."""
    if isinstance(x, bool):
        raise TypeError("bool is not a number here")
    if isinstance(x, Fraction):
        return x
    if isinstance(x, int):
        return Fraction(x)
    if isinstance(x, str):
        return Fraction(x.strip())
    if isinstance(x, float):
        if not math.isfinite(x):
            raise ValueError(f"non-finite value {x}")
        return Fraction(x)  # the exact binary value of the float
    if hasattr(x, "_mpf_"):
        return _tuple_to_fraction(x._mpf_)
    raise TypeError(f"cannot convert {x!r} to an exact rational")


def as_fraction(x) -> Fraction:
    """Exact rational value of x (int, Fraction, decimal string, float, mpmath mpf)."""
    return _as_fraction(x)


def _tuple_to_fraction(t) -> Fraction:
    sign, man, exp, _bc = t
    if not man:
        if exp:
            raise ValueError("non-finite mpf")
        return Fraction(0)
    v = Fraction(man << exp) if exp >= 0 else Fraction(man, 1 << -exp)
    return -v if sign else v


def _frac_down(q: Fraction, prec: int):
    return from_rational(q.numerator, q.denominator, prec, _F)


def _frac_up(q: Fraction, prec: int):
    return from_rational(q.numerator, q.denominator, prec, _C)


def _out(q: Fraction, prec: int, rnd: str) -> mpmath.mpf:
    """Fraction → mpf of the global context, rounded in direction ``rnd``."""
    return mpmath.mp.make_mpf(from_rational(q.numerator, q.denominator, prec, rnd))


def _enclosure(lo: Fraction, hi: Fraction, prec: int) -> tuple[mpmath.mpf, mpmath.mpf]:
    if not lo <= hi:
        raise ArithmeticError(f"oracle: empty enclosure [{float(lo)}, {float(hi)}]")
    return _out(lo, prec, _F), _out(hi, prec, _C)


def _log_of(x) -> float:
    """Natural log of a positive number given as float/int/str/Fraction (no underflow)."""
    q = _as_fraction(x)
    if q <= 0:
        raise ValueError("mass_tol must be positive")
    return math.log(q.numerator) - math.log(q.denominator)


def _mag(t) -> int:
    """An integer e with 0 < value(t) < 2^e (t a positive mpf tuple)."""
    return t[2] + t[3]


# ----------------------------------------------------------------------------- exp
def _exp_lo_hi(q: Fraction, prec: int):
    """Rigorous (lo, hi) mpf tuples with lo ≤ e^q ≤ hi (see module docstring, step 1)."""
    if q == 0:
        return fone, fone
    wp = prec + 20
    lo = mpf_exp(_frac_down(q, wp), wp, _F)
    hi = mpf_exp(_frac_up(q, wp), wp, _C)
    slack = EXP_SLACK_BITS - prec  # relative widening 2^slack
    shrink = from_man_exp((1 << (prec - EXP_SLACK_BITS)) - 1, slack)  # 1 − 2^slack, exact
    grow = from_man_exp((1 << (prec - EXP_SLACK_BITS)) + 1, slack)  # 1 + 2^slack, exact
    return mpf_mul(lo, shrink, prec, _F), mpf_mul(hi, grow, prec, _C)


def exp_enclosure(x, prec_bits: int = DEFAULT_PREC) -> tuple[Fraction, Fraction]:
    """Exact rationals (lo, hi) with lo ≤ e^x ≤ hi, x exact (Fraction, int, decimal string)."""
    lo, hi = _exp_lo_hi(_as_fraction(x), prec_bits)
    return _tuple_to_fraction(lo), _tuple_to_fraction(hi)


# ----------------------------------------------------------------------------- components
def _normalize(components) -> tuple[tuple[Fraction, int, int], ...]:
    out = []
    for c in components:
        if len(c) == 2:
            s2, s = c
            m = 1
        elif len(c) == 3:
            s2, s, m = c
        else:
            raise ValueError(f"component must be (sigma2, shift[, mult]), got {c!r}")
        s2 = _as_fraction(s2)
        if s2 <= 0:
            raise ValueError(f"sigma2 must be positive, got {s2}")
        if int(s) != s or s < 1:
            raise ValueError(f"shift must be an integer >= 1, got {s!r}")
        if int(m) != m or m < 1:
            raise ValueError(f"mult must be an integer >= 1, got {m!r}")
        out.append((s2, int(s), int(m)))
    if not out:
        raise ValueError("empty composition")
    return tuple(out)


def lattice(components) -> tuple[Fraction, list[int], int]:
    """(L, [b_k], 2C): L = lcm(den w)/gcd(num w), b_k = L·w_k, 2C = Σ m_k b_k s_k, w_k = s_k/σ²_k."""
    comps = _normalize(components)
    ws = [Fraction(s) / s2 for s2, s, _ in comps]
    scale = Fraction(math.lcm(*(w.denominator for w in ws)), math.gcd(*(w.numerator for w in ws)))
    bs = []
    for w in ws:
        b = scale * w
        assert b.denominator == 1
        bs.append(int(b))
    assert math.gcd(*bs) == 1
    return scale, bs, sum(m * b * s for b, (_, s, m) in zip(bs, comps))


# ----------------------------------------------------------------------------- one discrete Gaussian
def _choose_radius(sigma2: Fraction, log_budget: float) -> int:
    """Smallest R ≥ 0 with (float estimate of) log B_R ≤ log_budget − 2 (any R is rigorous; this
    only controls tightness)."""
    s2 = float(sigma2)
    target = log_budget - 2.0

    def log_b(r: int) -> float:
        t = r + 1
        return math.log(2.0) - t * t / (2 * s2) - math.log(-math.expm1(-t / s2))

    r = max(0, int(math.sqrt(max(0.0, -2 * s2 * target))) - 3)
    while log_b(r) > target:
        r += 1
    return r


@functools.lru_cache(maxsize=64)
def _dg_table(sigma2: Fraction, radius: int, prec: int):
    """Enclosures of the discrete Gaussian on |x| ≤ radius.

    Returns (lo, hi, b_hi): dicts x → mpf tuple with lo[x] ≤ p(x) ≤ hi[x], and b_hi ≥ B_R (an
    upper bound on Σ_{|x|>R} e^{−x²/(2σ²)}, hence on P[|X| > R] because Z ≥ 1).
    """
    n, d = sigma2.numerator, sigma2.denominator
    e_lo, e_hi = {}, {}
    for x in range(radius + 1):
        lo, hi = _exp_lo_hi(Fraction(-x * x * d, 2 * n), prec)
        e_lo[x], e_hi[x] = lo, hi
    # B_R = 2 e^{-(R+1)^2/(2σ²)} / (1 − e^{-(R+1)/σ²}), rounded up
    t = radius + 1
    num_hi = _exp_lo_hi(Fraction(-t * t * d, 2 * n), prec)[1]
    den_lo = mpf_sub(fone, _exp_lo_hi(Fraction(-t * d, n), prec)[1], prec, _F)
    if den_lo[1] == 0 or den_lo[0]:
        raise ArithmeticError("tail bound denominator not positive")
    b_hi = mpf_div(mpf_mul(from_int(2), num_hi, prec, _C), den_lo, prec, _C)
    s_lo, s_hi = e_lo[0], e_hi[0]
    for x in range(1, radius + 1):
        s_lo = mpf_add(s_lo, mpf_mul(from_int(2), e_lo[x], prec, _F), prec, _F)
        s_hi = mpf_add(s_hi, mpf_mul(from_int(2), e_hi[x], prec, _C), prec, _C)
    z_lo, z_hi = s_lo, mpf_add(s_hi, b_hi, prec, _C)  # Z_lo ≤ Z ≤ Z_hi
    lo, hi = {}, {}
    for x in range(-radius, radius + 1):
        lo[x] = mpf_div(e_lo[abs(x)], z_hi, prec, _F)
        hi[x] = mpf_div(e_hi[abs(x)], z_lo, prec, _C)
    return lo, hi, b_hi


def discrete_gaussian_enclosure(sigma2, radius: int, prec_bits: int = DEFAULT_PREC):
    """Certified pmf of N_Z(0, σ²) on |x| ≤ radius.

    Returns (table, tail_bound): table[x] = (lo, hi) mpf with lo ≤ p(x) ≤ hi, and
    tail_bound ≥ P[|X| > radius] (the bound B_R of the module docstring; Z ≥ 1).
    """
    lo, hi, b_hi = _dg_table(_as_fraction(sigma2), int(radius), int(prec_bits))
    mk = mpmath.mp.make_mpf
    return {x: (mk(lo[x]), mk(hi[x])) for x in lo}, mk(b_hi)


# ----------------------------------------------------------------------------- lattice pmf
@dataclass
class PMFEnclosure:
    """Certified law of Y (see module docstring, steps 2–3).

    Attributes:
        masses: dict y → mpf c_y with 0 ≤ c_y ≤ P[Y = y] (only y with c_y > 0 are stored);
            every c_y is a multiple of 2^-frac_bits.
        E: mpf upper bound on the missing mass 1 − Σ c_y (the exact value is ``E_exact``).
        E_exact: the exact missing mass 1 − Σ_y c_y as a Fraction.
        scale, weights, two_c: L, (b_k), 2C.
        radii: truncation radius R_k per component.
        prec, frac_bits: binary precision of the exp tables; fixed-point bits F of the masses.

    For every integer k:  Σ_{y≥k} c_y ≤ P[Y ≥ k] ≤ Σ_{y≥k} c_y + E_exact, and
    c_y ≤ P[Y = y] ≤ c_y + E_exact.  ``masses, E = pmf_enclosure(...)`` unpacks.
    """

    masses: dict
    E: mpmath.mpf
    E_exact: Fraction
    scale: Fraction
    weights: tuple
    two_c: int
    radii: tuple
    prec: int
    frac_bits: int
    _ys: list = field(repr=False, default_factory=list)
    _pre: list = field(repr=False, default_factory=list)  # pre[i] = 2^F·Σ_{t<i} c_{ys[t]}
    _raw: dict = field(repr=False, default_factory=dict)  # y → 2^F·c_y (int)

    def __iter__(self):
        yield self.masses
        yield self.E

    # exact pieces, as Fractions ----------------------------------------------------------
    @property
    def _den(self) -> int:
        return 1 << self.frac_bits

    def upper_sum(self, k: int) -> Fraction:
        """Σ_{y≥k} c_y exactly."""
        i = bisect.bisect_left(self._ys, k)
        return Fraction(self._pre[-1] - self._pre[i], self._den)

    def lower_sum(self, k: int) -> Fraction:
        """Σ_{y<k} c_y exactly."""
        return Fraction(self._pre[bisect.bisect_left(self._ys, k)], self._den)

    def mass(self, y: int) -> Fraction:
        return Fraction(self._raw.get(y, 0), self._den)

    def tail_q(self, k: int) -> tuple[Fraction, Fraction]:
        """Exact rational enclosure of P[Y ≥ k]: [Σ_{y≥k} c, 1 − Σ_{y<k} c]."""
        return self.upper_sum(k), 1 - self.lower_sum(k)

    def lower_tail_q(self, k: int) -> tuple[Fraction, Fraction]:
        """Exact rational enclosure of P[Y ≤ k]: [Σ_{y≤k} c, 1 − Σ_{y>k} c]."""
        return self.lower_sum(k + 1), 1 - self.upper_sum(k + 1)

    def point_q(self, y: int) -> tuple[Fraction, Fraction]:
        """Exact rational enclosure of P[Y = y]: [c_y, c_y + E]."""
        c = self.mass(y)
        return c, c + self.E_exact


def _kron_step(dist: dict, base: list, radius: int, b: int, frac_bits: int) -> dict:
    """One convolution step  dist * (law of b·X)  in exact integer arithmetic.

    ``dist`` maps y → integer numerator (mass = value·2^-F), ``base`` lists the numerators of
    X at x = −R..R.  The support of dist is split into residue classes mod b; within a class
    the convolution with the stride-b base is an ordinary sequence convolution, done exactly by
    Kronecker substitution (pack each sequence into one Python integer with slots wide enough
    that no coefficient overflows, multiply, unpack).  Each exact coefficient (a multiple of
    2^-2F) is then floored to a multiple of 2^-F, so every output is a lower bound of the exact
    convolution of the inputs.
    """
    F = frac_bits
    nb = len(base)
    classes: dict[int, list] = {}
    for y, v in dist.items():
        r = y % b
        classes.setdefault(r, []).append(((y - r) // b, v))
    # a class is cut into chunks wherever consecutive indices are more than nb apart (so the
    # zero padding per chunk is < nb slots); chunk results are added (floor(u) + floor(v) ≤
    # floor(u + v), so the sum of floored chunks is still a lower bound).
    chunks = []
    for r, items in classes.items():
        items.sort()
        start = 0
        for t in range(1, len(items) + 1):
            if t == len(items) or items[t][0] - items[t - 1][0] > nb:
                chunks.append((r, items[start:t]))
                start = t
    packed_base: dict[int, int] = {}
    out: dict[int, int] = {}
    get = out.get
    for r, items in chunks:
        i0 = items[0][0]
        n = items[-1][0] - i0 + 1
        # every value ≤ 2^F, so a coefficient is ≤ min(n, nb)·2^{2F} < 2^{2F + bitlen(min(n, nb))}
        wb = (2 * F + min(n, nb).bit_length() + 8) // 8
        if wb not in packed_base:
            packed_base[wb] = int.from_bytes(b"".join(v.to_bytes(wb, "little") for v in base), "little")
        vals = [0] * n
        for i, v in items:
            vals[i - i0] = v
        a = int.from_bytes(b"".join(v.to_bytes(wb, "little") for v in vals), "little")
        m = n + nb - 1
        buf = (a * packed_base[wb]).to_bytes(m * wb, "little")
        y0 = r + b * (i0 - radius)
        for t in range(m):
            c = int.from_bytes(buf[t * wb : (t + 1) * wb], "little") >> F
            if c:
                y = y0 + b * t
                out[y] = get(y, 0) + c
    return out


def _floor_log2(log_value: float) -> int:
    return math.floor(log_value / math.log(2))


@functools.lru_cache(maxsize=16)
def _pmf_cached(comps, prec, log_tol):
    scale, bs, two_c = lattice(comps)
    n_factors = sum(m for _, _, m in comps)
    # budget: truncation, pruning and fixed-point flooring each get mass_tol/(3·n_factors)
    log_share = log_tol - math.log(3 * n_factors)
    radii = [_choose_radius(s2, log_share) for s2, _, _ in comps]
    span = 1 + sum(m * b * 2 * r for (_, _, m), b, r in zip(comps, bs, radii))
    # F fraction bits: one step floors at most `span` entries by < 2^-F each
    frac_bits = -_floor_log2(log_share) + span.bit_length() + 8
    prec = max(prec, frac_bits + 64)
    one = 1 << frac_bits
    dist = {0: one}
    for (s2, _s, m), b, r in zip(comps, bs, radii):
        lo, _hi, _b = _dg_table(s2, r, prec)
        base = []
        for x in range(-r, r + 1):
            _sg, man, exp, _bc = lo[x]
            e = exp + frac_bits
            base.append(man << e if e >= 0 else man >> -e)  # floor(a_x·2^F)
        for _ in range(m):
            dist = _kron_step(dist, base, r, b, frac_bits)
            # drop entries below share/len(dist): at most `share` mass per step
            thr = 1 << max(0, _floor_log2(log_share - math.log(len(dist))) + frac_bits)
            dist = {y: v for y, v in dist.items() if v >= thr}
    ys = sorted(dist)
    pre = [0]
    acc = 0
    for y in ys:
        acc += dist[y]
        pre.append(acc)
    if acc > one:
        raise ArithmeticError("oracle: computed lower masses sum above 1 (bug)")
    e_exact = Fraction(one - acc, one)
    mk = mpmath.mp.make_mpf
    return PMFEnclosure(
        masses={y: mk(from_man_exp(dist[y], -frac_bits)) for y in ys},
        E=_out(e_exact, prec, _C),
        E_exact=e_exact,
        scale=scale,
        weights=tuple(bs),
        two_c=two_c,
        radii=tuple(radii),
        prec=prec,
        frac_bits=frac_bits,
        _ys=ys,
        _pre=pre,
        _raw=dist,
    )


def pmf_enclosure(components, prec_bits: int = DEFAULT_PREC, mass_tol=DEFAULT_MASS_TOL) -> PMFEnclosure:
    """Certified lattice pmf of Y = Σ b_k X_k (module docstring, steps 1–3).

    Args:
        components: list of (sigma2, shift, mult) (sigma2 a Fraction / decimal string).
        prec_bits: binary working precision.
        mass_tol: target for the total missing mass E (absolute); truncation radii and pruning
            thresholds are chosen so that E ≲ mass_tol.  The returned E is rigorous regardless.

    Returns a :class:`PMFEnclosure`; ``masses, E = pmf_enclosure(...)`` gives the dict
    y → c_y (lower bounds of P[Y = y]) and E with Σ_{y≥k} c_y ≤ P[Y ≥ k] ≤ Σ_{y≥k} c_y + E.
    Results are cached per (components, prec_bits, mass_tol).
    """
    return _pmf_cached(_normalize(components), int(prec_bits), _log_of(mass_tol))


# ----------------------------------------------------------------------------- tails, δ
def tail(components, k: int, prec_bits: int = DEFAULT_PREC, mass_tol=DEFAULT_MASS_TOL):
    """Certified (lo, hi) of P[Y ≥ k]; width ≤ E ≈ mass_tol."""
    pe = pmf_enclosure(components, prec_bits, mass_tol)
    return _enclosure(*pe.tail_q(int(k)), prec_bits)


def lower_tail(components, k: int, prec_bits: int = DEFAULT_PREC, mass_tol=DEFAULT_MASS_TOL):
    """Certified (lo, hi) of P[Y ≤ k] (computed directly from the lower side, not as 1 − tail)."""
    pe = pmf_enclosure(components, prec_bits, mass_tol)
    return _enclosure(*pe.lower_tail_q(int(k)), prec_bits)


def _k1(pe: PMFEnclosure, eps: Fraction) -> int:
    return math.floor(pe.scale * eps - Fraction(pe.two_c, 2)) + 1


def _delta_q(pe: PMFEnclosure, eps: Fraction, prec: int) -> tuple[Fraction, Fraction]:
    k1 = _k1(pe, eps)
    e_lo, e_hi = exp_enclosure(eps, prec)
    t1_lo, t1_hi = pe.tail_q(k1)
    t2_lo, t2_hi = pe.tail_q(k1 + pe.two_c)
    lo = t1_lo - e_hi * t2_hi
    hi = t1_hi - e_lo * t2_lo
    return max(lo, Fraction(0)), min(hi, Fraction(1))


def delta(components, eps, prec_bits: int = DEFAULT_PREC, mass_tol=DEFAULT_MASS_TOL):
    """Certified (lo, hi) of δ(ε) = P[Y ≥ k1] − e^ε P[Y ≥ k1 + 2C], k1 = ⌊Lε − C⌋ + 1.

    ε is exact (Fraction, int, or decimal string parsed by ``Fraction(str)``).  With tail
    enclosures [t1_lo, t1_hi], [t2_lo, t2_hi] and e^ε ∈ [e_lo, e_hi]:
    lo = t1_lo − e_hi t2_hi, hi = t1_hi − e_lo t2_lo (exact rationals), clipped to [0, 1].
    """
    pe = pmf_enclosure(components, prec_bits, mass_tol)
    return _enclosure(*_delta_q(pe, _as_fraction(eps), prec_bits), prec_bits)


# ----------------------------------------------------------------------------- trade-off
def _vertex_q(pe: PMFEnclosure, j: int):
    return pe.tail_q(j), pe.tail_q(pe.two_c + 1 - j)


def vertex(components, j: int, prec_bits: int = DEFAULT_PREC, mass_tol=DEFAULT_MASS_TOL):
    """Certified ((α_lo, α_hi), (β_lo, β_hi)) of the vertex (P[Y ≥ j], P[Y ≥ 2C+1−j])."""
    pe = pmf_enclosure(components, prec_bits, mass_tol)
    a, b = _vertex_q(pe, int(j))
    return _enclosure(*a, prec_bits), _enclosure(*b, prec_bits)


#: at most this many candidate brackets are examined (more means α is within ~E of 0 or 1).
_MAX_CANDIDATES = 64


def _beta_q(pe: PMFEnclosure, a: Fraction) -> tuple[Fraction, Fraction]:
    if a <= 0:
        return Fraction(1), Fraction(1)
    if a >= 1:
        return Fraction(0), Fraction(0)
    ys, pre, den = pe._ys, pe._pre, pe._den
    n = len(ys)
    total = pre[-1]  # T = Σ c (units of 1/den); α_j ∈ [U_j, U_j + E], U_j = T − pre[idx(j)]
    au = a * den
    two_c = pe.two_c

    def beta_lo_hi(j):
        return pe.tail_q(two_c + 1 - j)

    # monotone bounds: β(α) ≥ β_j for every j with α_j ≥ α surely (U_j ≥ α); the largest such j
    i = bisect.bisect_right(pre, total - au) - 1
    lo = beta_lo_hi(ys[i])[0] if i >= 0 else Fraction(0)
    # β(α) ≤ β_j for every j with α_j ≤ α surely (U_j + E ≤ α); the smallest such j
    i = bisect.bisect_left(pre, den - au)
    hi = beta_lo_hi(ys[i - 1] + 1)[1] if i <= n else Fraction(1)

    # candidate brackets j (α_{j+1} ≤ α ≤ α_j possible): U_{j+1} ≤ α and U_j + E ≥ α
    i_lo = bisect.bisect_left(pre, total - au)
    j_lo = ys[i_lo - 1] if i_lo >= 1 else None  # None: −∞
    i_hi = bisect.bisect_right(pre, den - au) - 1
    j_hi = ys[i_hi] if i_hi < n else None  # None: +∞
    if j_lo is not None and j_hi is not None and j_hi - j_lo < _MAX_CANDIDATES:
        seg_lo, seg_hi = None, None
        for j in range(j_lo, j_hi + 1):
            (alo, ahi) = pe.tail_q(j)
            n_lo, n_hi = alo - a, ahi - a  # α_j − α
            d_lo, d_hi = pe.point_q(j)  # p_j
            # t = (α_j − α)/p_j, known to lie in [0, 1] if j is the true bracket
            t_lo = Fraction(0) if n_lo <= 0 or d_hi == 0 else n_lo / d_hi
            if n_hi < 0:
                continue  # t < 0: not the bracket
            t_hi = Fraction(1) if d_lo == 0 else min(Fraction(1), n_hi / d_lo)
            if t_lo > 1:
                continue  # t > 1: not the bracket
            b_lo, b_hi = beta_lo_hi(j)
            g_lo, g_hi = pe.point_q(two_c - j)  # p_{2C−j} = β_{j+1} − β_j
            f_lo, f_hi = b_lo + t_lo * g_lo, b_hi + t_hi * g_hi
            seg_lo = f_lo if seg_lo is None else min(seg_lo, f_lo)
            seg_hi = f_hi if seg_hi is None else max(seg_hi, f_hi)
        if seg_lo is None:
            raise ArithmeticError("oracle: no bracket found for beta (bug)")
        lo, hi = max(lo, seg_lo), min(hi, seg_hi)
    lo, hi = max(lo, Fraction(0)), min(hi, Fraction(1))
    return lo, hi


def beta(components, alpha, prec_bits: int = DEFAULT_PREC, mass_tol=DEFAULT_MASS_TOL):
    """Certified (lo, hi) of the trade-off function β(α), 0 ≤ α ≤ 1 (exact α).

    β is the piecewise-linear interpolation of the vertices (α_j, β_j); β(0) = 1, β(1) = 0.
    Every j whose bracket α_{j+1} ≤ α ≤ α_j cannot be excluded by the enclosures is a
    candidate; for each, β(α) = β_j + t·p_{2C−j} with t = (α_j − α)/p_j ∈ [0, 1] is enclosed,
    and the union over candidates is intersected with the monotone bounds β_{j'} ≤ β(α) ≤ β_{j''}
    (α_{j'} ≥ α ≥ α_{j''} surely).  All quantities are exact sums of the certified lower pmf
    (upper tails for α_j, lower tails 1 − Σ_{y<j} c for their upper ends), so α near 1 (e.g.
    1 − 1e-30) and near 0 (1e-40) keep relative precision as long as min(α, 1 − α) ≫ E.
    If α or 1 − α is within ~E, only the (still rigorous) monotone bounds are returned.
    """
    pe = pmf_enclosure(components, prec_bits, mass_tol)
    a = _as_fraction(alpha)
    if not 0 <= a <= 1:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha!r}")
    return _enclosure(*_beta_q(pe, a), prec_bits)


# ----------------------------------------------------------------------------- joint enumeration
def delta_joint(mechs, eps, tol=1e-40, prec_bits: int = 256):
    """Certified δ(ε) = Σ_o max(0, P(o) − e^ε Q(o)) by enumerating joint outcomes.

    P = Π_k N_Z(0, σ²_k), Q = Π_k N_Z(s_k, σ²_k); ``mechs`` are (sigma2, shift) or
    (sigma2, shift, mult) (expanded), at most 3 mechanisms in all, σ² ≤ 3 recommended.
    This does *not* use the lattice reduction; it checks it.

    Error bound: outcomes are enumerated over the box x_k ∈ [−R_k, s_k + R_k] with pointwise
    pmf enclosures (directed rounding), giving [S_lo, S_hi] ∋ S = Σ_{o∈box} max(0, P − e^ε Q).
    Outside the box max(0, P − e^ε Q) ≤ P(o), so 0 ≤ δ − S ≤ P[o ∉ box] ≤ Σ_k P[|X_k| > R_k]
    ≤ Σ_k B_{R_k} (≈ tol).  Returns (S_lo, S_hi + Σ_k B_{R_k}).
    """
    flat = []
    for c in mechs:
        s2, s, m = (c[0], c[1], 1) if len(c) == 2 else c
        flat += [(_as_fraction(s2), int(s))] * int(m)
    if not 1 <= len(flat) <= 3:
        raise ValueError("delta_joint: between 1 and 3 mechanisms")
    prec = int(prec_bits)
    e_lo, e_hi = _exp_lo_hi(_as_fraction(eps), prec)
    log_share = _log_of(tol) - math.log(len(flat))
    coords, tail_bound = [], Fraction(0)
    for s2, s in flat:
        r = _choose_radius(s2, log_share)
        lo, hi, _b_hi = _dg_table(s2, r + s, prec)  # table wide enough for x − s in the box
        tail_bound += _tuple_to_fraction(_dg_table(s2, r, prec)[2])
        pts = []
        for x in range(-r, s + r + 1):
            pts.append((lo.get(x, fzero), hi.get(x, fzero), lo.get(x - s, fzero), hi.get(x - s, fzero)))
        coords.append(pts)
    mul, sub, add = mpf_mul, mpf_sub, mpf_add
    acc_lo, acc_hi = fzero, fzero
    *outer, inner = coords
    for combo in itertools.product(*outer):
        plo = phi = qlo = qhi = fone
        for p_l, p_h, q_l, q_h in combo:
            plo, phi = mul(plo, p_l, prec, _F), mul(phi, p_h, prec, _C)
            qlo, qhi = mul(qlo, q_l, prec, _F), mul(qhi, q_h, prec, _C)
        eqlo, eqhi = mul(e_lo, qlo, prec, _F), mul(e_hi, qhi, prec, _C)
        for p_l, p_h, q_l, q_h in inner:
            d_lo = sub(mul(plo, p_l, prec, _F), mul(eqhi, q_h, prec, _C), prec, _F)
            if d_lo[1] and not d_lo[0]:
                acc_lo = add(acc_lo, d_lo, prec, _F)
            d_hi = sub(mul(phi, p_h, prec, _C), mul(eqlo, q_l, prec, _F), prec, _C)
            if d_hi[1] and not d_hi[0]:
                acc_hi = add(acc_hi, d_hi, prec, _C)
    lo = _tuple_to_fraction(acc_lo)
    hi = _tuple_to_fraction(acc_hi) + tail_bound
    return _enclosure(max(lo, Fraction(0)), min(hi, Fraction(1)), prec)
