"""Certified numbers: a value together with a rigorous enclosure.

Every probability the accountant reports is a :class:`Certified` interval
``[lower, upper]`` that is guaranteed to contain the exact mathematical value; the bound
accounts for truncation, aliasing, pruning and rounding (see :mod:`accountant.bounds`).
End points are exact binary numbers held as :class:`mpmath.mpf`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import mpmath
from flint import arb, ctx, fmpz
from mpmath.libmp import from_man_exp

if TYPE_CHECKING:
    from .diagnostics import EngineDiagnostics

__all__ = [
    "Certified",
    "arb_interval_to_certified",
    "arb_to_certified",
    "ball",
    "down",
    "exact_mpf",
    "mpf_to_arb",
    "up",
]

#: working precision (bits) of interval-endpoint arithmetic; every operation on endpoints is
#: followed by an outward nudge of 2^-(PREC-16) relative (see :func:`down`, :func:`up`), which
#: over-covers the rounding error of one operation.
PREC = 512
_CTX = mpmath.mp.clone()
_CTX.prec = PREC
_NUDGE = _CTX.mpf(2) ** (16 - PREC)
_ZERO = _CTX.mpf(0)
_ONE = _CTX.mpf(1)
_LN2 = math.log(2)


def _mpf(x) -> mpmath.mpf:
    return _CTX.mpf(x)


def exact_mpf(man: int, exp: int) -> mpmath.mpf:
    """The binary number man·2^exp as an mpf, exactly (no rounding at any precision)."""
    return _CTX.make_mpf(from_man_exp(int(man), int(exp)))


def log_of(x) -> float:
    """Natural log of a positive number (float, mpf or Arb ball's midpoint) as a float, without
    underflow and without a transcendental at high precision (planning and targets only);
    −inf for 0."""
    if isinstance(x, (float, int)):
        return math.log(x) if x > 0 else -math.inf
    if hasattr(x, "_mpf_"):
        sign, man, exp, _ = x._mpf_
    else:  # an Arb ball (python-flint): its midpoint
        man_z, exp_z = x.mid().man_exp()
        man, exp, sign = int(man_z), int(exp_z), 0
    if not man or sign:
        return -math.inf
    return math.log(man) + exp * _LN2


def from_log(x: float) -> mpmath.mpf:
    """An mpf close to e^x (relative error about (|x| + 1)·2^-52) for any float x, without float
    underflow or a high-precision exp: for targets, never for bounds."""
    n = math.floor(x / _LN2)
    frac = 2.0 ** (x / _LN2 - n)  # in [1, 2)
    return exact_mpf(int(frac * 2.0**52), n - 52)


def down(x) -> mpmath.mpf:
    """x nudged towards −∞ by more than one rounding error at PREC bits."""
    x = _mpf(x)
    return x - abs(x) * _NUDGE


def up(x) -> mpmath.mpf:
    """x nudged towards +∞ by more than one rounding error at PREC bits."""
    x = _mpf(x)
    return x + abs(x) * _NUDGE


@dataclass(frozen=True, slots=True)
class Certified:
    """A real number known to lie in ``[lower, upper]``.

    ``value`` is the midpoint and ``error`` the half-width, so ``|exact − value| ≤ error``.
    ``float(c)`` gives the midpoint rounded to a float.

    ``tol`` / ``rtol`` record the error the caller asked for (absolute / relative, ``None`` =
    not requested); :attr:`tolerance_met` says whether the interval meets both.  The interval is
    rigorous either way: a miss only means fewer certified digits than requested.

    ``diagnostics`` (results of :class:`accountant.composition.Composition` only, ``None``
    otherwise) describes the engine batch that produced the interval
    (:class:`accountant.engine.EngineDiagnostics`); it takes no part in comparisons, hashing or
    the repr, and arithmetic on Certified numbers drops it.

    >>> c = Certified.from_bounds(1, 3)
    >>> (float(c.value), float(c.error), c.contains(2.5))
    (2.0, 1.0, True)
    >>> c.with_target(tol=0.5).tolerance_met, c.with_target(tol=2, rtol=0.6).tolerance_met
    (False, True)
    """

    lower: mpmath.mpf
    upper: mpmath.mpf
    tol: float | None = field(default=None, compare=False)
    rtol: float | None = field(default=None, compare=False)
    diagnostics: EngineDiagnostics | None = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        lo, hi = self.lower, self.upper
        lo = lo if isinstance(lo, _CTX.mpf) else _mpf(lo)
        hi = hi if isinstance(hi, _CTX.mpf) else _mpf(hi)
        if not (lo <= hi):
            raise ValueError(f"Certified: lower {lo} exceeds upper {hi}")
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)

    def with_target(self, tol=None, rtol=None, diagnostics=None) -> Certified:
        """The same interval, recording the requested absolute / relative error (and
        ``diagnostics``, default: keep this one's)."""
        out = object.__new__(Certified)
        object.__setattr__(out, "lower", self.lower)
        object.__setattr__(out, "upper", self.upper)
        object.__setattr__(out, "tol", None if tol is None else float(tol))
        object.__setattr__(out, "rtol", None if rtol is None else float(rtol))
        object.__setattr__(out, "diagnostics", self.diagnostics if diagnostics is None else diagnostics)
        return out

    def with_diagnostics(self, diagnostics) -> Certified:
        """The same interval and targets, carrying ``diagnostics``."""
        return self.with_target(self.tol, self.rtol, diagnostics)

    @property
    def tolerance_met(self) -> bool:
        """error ≤ tol and error ≤ rtol·|value| for the requested targets (True if none was
        requested).  An enclosure [0, u] of a positive number never meets a relative target."""
        err = self.error
        if self.tol is not None and not (err <= self.tol):
            return False
        return self.rtol is None or err <= self.rtol * abs(self.value)

    @classmethod
    def from_bounds(cls, lower, upper) -> Certified:
        return cls(_mpf(lower), _mpf(upper))

    @classmethod
    def from_value_error(cls, value, error) -> Certified:
        v, e = _mpf(value), abs(_mpf(error))
        return cls(v - e, v + e)

    @property
    def value(self) -> mpmath.mpf:
        return (self.lower + self.upper) / 2

    @property
    def error(self) -> mpmath.mpf:
        return (self.upper - self.lower) / 2

    @property
    def relative_error(self) -> mpmath.mpf:
        """error/|value| (infinite when the value is 0)."""
        v = abs(self.value)
        return self.error / v if v else _CTX.inf

    def contains(self, x) -> bool:
        x = _mpf(x)
        return bool(self.lower <= x <= self.upper)

    def clip(self, lo=0, hi=1) -> Certified:
        """Intersect with [lo, hi] (e.g. probabilities lie in [0, 1])."""
        lo, hi = _mpf(lo), _mpf(hi)
        return Certified(min(max(self.lower, lo), hi), max(min(self.upper, hi), lo))

    def __float__(self) -> float:
        return float(self.value)

    def digits(self, n: int = 20) -> str:
        """Midpoint as a decimal string with ``n`` significant digits."""
        return mpmath.nstr(self.value, n, min_fixed=1, max_fixed=0, strip_zeros=False)

    def __str__(self) -> str:
        miss = "" if self.tolerance_met else " (tolerance not met)"
        # the error printed on its safe side: 3 significant digits are within 0.5 % of the
        # value, so 1.01·error rounded to nearest is ≥ error (works at any exponent)
        return f"{self.digits(20)} ± {mpmath.nstr(up(self.error) * 1.01, 3)}{miss}"

    def __neg__(self) -> Certified:
        return Certified(-self.upper, -self.lower)

    def __add__(self, other) -> Certified:
        if isinstance(other, Certified):
            return Certified(down(self.lower + other.lower), up(self.upper + other.upper))
        o = _mpf(other)
        return Certified(down(self.lower + o), up(self.upper + o))

    __radd__ = __add__

    def __sub__(self, other) -> Certified:
        return self + (-other if isinstance(other, Certified) else -_mpf(other))

    def __rsub__(self, other) -> Certified:
        return (-self) + other

    def scale(self, factor_lower, factor_upper=None) -> Certified:
        """Multiply by a non-negative factor known to lie in [factor_lower, factor_upper]."""
        flo = _mpf(factor_lower)
        fhi = flo if factor_upper is None else _mpf(factor_upper)
        if flo < 0:
            raise ValueError("Certified.scale: factor must be non-negative")
        cands = [self.lower * flo, self.lower * fhi, self.upper * flo, self.upper * fhi]
        return Certified(down(min(cands)), up(max(cands)))


# ---------------------------------------------------------------- Arb ball conversions
def arb_to_certified(x, clip01: bool = False) -> Certified:
    """Exact conversion of an Arb ball to a :class:`Certified` interval (lossless).

    The end points are taken at a precision above the midpoint's own bits, whatever the current
    Arb precision is; ``clip01`` intersects the interval with [0, 1] (probabilities).
    """
    old = ctx.prec
    ctx.prec = max(old, int(x.mid().bits()) + 64)  # lower()/upper() round at the working precision
    try:
        lo, hi = x.lower(), x.upper()
    finally:
        ctx.prec = old
    if not (lo.is_finite() and hi.is_finite()):
        raise ArithmeticError(f"non-finite enclosure {x}")
    m1, e1 = lo.man_exp()
    m2, e2 = hi.man_exp()
    a, b = exact_mpf(m1, e1), exact_mpf(m2, e2)
    if clip01:
        a, b = max(a, _mpf(0)), min(b, _mpf(1))
    return Certified(a, b)


def arb_interval_to_certified(lo, hi, clip01: bool = False) -> Certified:
    """[lower end of ball ``lo``, upper end of ball ``hi``] as a :class:`Certified` (one call
    instead of two :func:`arb_to_certified`; for the thousands of tails of a batch).

    The ends are Arb's lower()/upper(), rounded outward (towards −∞ / +∞) at the working
    precision, hence still valid bounds; ``clip01`` intersects with [0, 1].  Requires
    lower(lo) ≤ upper(hi) (after clipping).
    """
    a, b = lo.lower(), hi.upper()
    if not (a.is_finite() and b.is_finite()):
        raise ArithmeticError(f"non-finite enclosure [{lo}, {hi}]")
    if clip01:
        a = _ZERO if a < 0 else exact_mpf(*a.man_exp())
        b = _ONE if b > 1 else exact_mpf(*b.man_exp())
    else:
        a, b = exact_mpf(*a.man_exp()), exact_mpf(*b.man_exp())
    if not (a <= b):
        raise ValueError(f"Certified: lower {a} exceeds upper {b}")
    out = object.__new__(Certified)
    object.__setattr__(out, "lower", a)  # both already exact mpf of the module's context
    object.__setattr__(out, "upper", b)
    object.__setattr__(out, "tol", None)
    object.__setattr__(out, "rtol", None)
    object.__setattr__(out, "diagnostics", None)
    return out


def mpf_to_arb(x):
    """Exact conversion of a finite mpmath number to an Arb ball (python-flint's arb(mpf) rounds)."""
    sign, man, exp, bc = _mpf(x)._mpf_ if not hasattr(x, "_mpf_") else x._mpf_
    if not man:
        if exp:  # mpmath encodes nan/inf as man == 0 with a special exp
            raise ValueError(f"non-finite value {x}")
        return arb(0)
    old = ctx.prec
    ctx.prec = max(old, int(bc) + 8)
    try:
        v = arb(fmpz(int(man))) * arb(2) ** int(exp)
    finally:
        ctx.prec = old
    return -v if sign else v


def ball(lo, hi):
    """An Arb ball containing [lower(lo), upper(hi)] (``lo``, ``hi`` Arb balls)."""
    a, b = arb(lo.lower()), arb(hi.upper())
    m = (a + b) / 2
    return arb(m.mid(), ((b - a) / 2).upper() + m.rad())
