"""Exact directed decimal rounding: print a certified bound on its safe side.

Every end point the accountant produces is an exact binary number m·2^e (an :class:`mpmath.mpf`
of :mod:`accountant.certified`).  Printing it with ``mpmath.nstr`` rounds to the *nearest*
n-digit decimal, which is as likely to land inside the certified interval as outside it: a
printed "upper bound" may then be below the exact upper end point (and below the true value).
The functions here round with pure integer arithmetic on the exact rational value, so

* ``decimal_string(x, n, "down")`` is the largest n-significant-digit decimal ≤ x,
* ``decimal_string(x, n, "up")`` the smallest one ≥ x,
* ``decimal_string(x, n, "nearest")`` the closest one (ties towards +∞),

exactly, whatever the working precision of mpmath (no global precision state is read or
changed).  An interval [lower, upper] is printed *outward* — lower rounded down, upper rounded
up (:func:`format_interval`, :func:`outward`) — so the printed interval still contains the
exact value; an error bound (a half-width) is rounded up (:func:`format_error_up`); a midpoint,
which is no bound, is rounded to nearest (:func:`mid_decimal`) and should be labelled so.

Accepted inputs: ``int``, finite ``float`` (its exact binary value), ``Fraction``, ``Decimal``,
decimal strings (parsed exactly, e.g. ``"1e-10"`` or ``"3/7"``) and finite mpmath numbers.
Output is scientific (``"6.95e-30"``, ``"-3.334e-1"``, ``"1.00e3"``, ``"0.0"``); with
``notation="auto"`` exponents from −5 to n − 1 are written positionally (``"0.525"``,
``"26.3"``) — the same digits, so the same exact value.  Pure functions, no I/O.

>>> from fractions import Fraction
>>> decimal_string(Fraction(1, 3), 4, "down"), decimal_string(Fraction(1, 3), 4, "up")
('3.333e-1', '3.334e-1')
>>> decimal_string(Fraction(-1, 3), 4, "down"), decimal_string(Fraction(2, 3), 4, "nearest", notation="auto")
('-3.334e-1', '0.6667')
>>> format_interval((Fraction(1, 3), Fraction(2, 3)), 3)
('3.33e-1', '6.67e-1')
>>> format_error_up(Fraction(1, 700))
'1.43e-3'
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from typing import Any

import mpmath

__all__ = [
    "MODES",
    "decimal_string",
    "exact_fraction",
    "format_error_up",
    "format_interval",
    "half_width",
    "mid_decimal",
    "outward",
]

#: rounding modes of :func:`decimal_string`
MODES = ("down", "up", "nearest")
#: default significant digits (those of the pair-job results)
DEFAULT_DIGITS = 25


# ---------------------------------------------------------------------- exact values
def _ratio(x: Any) -> tuple[int, int] | None:
    """(num, den) with den > 0 and x = num/den exactly; ``None`` for zero.  Raises
    ValueError for non-finite or unparsable values."""
    if isinstance(x, bool):
        raise ValueError(f"decimal: not a number: {x!r}")
    if isinstance(x, int):
        return (x, 1) if x else None
    if isinstance(x, float):
        if not math.isfinite(x):
            raise ValueError(f"decimal: not finite: {x!r}")
        if not x:
            return None
        f = Fraction(x)  # exact
        return f.numerator, f.denominator
    if isinstance(x, (Fraction, Decimal, str)):
        try:
            f = Fraction(x.strip() if isinstance(x, str) else x)
        except (ValueError, ZeroDivisionError, OverflowError):
            raise ValueError(f"decimal: cannot parse {x!r} as a finite number") from None
        return (f.numerator, f.denominator) if f else None
    mpf = getattr(x, "_mpf_", None)
    if mpf is None:
        try:
            mpf = mpmath.mpf(x)._mpf_
        except (TypeError, ValueError):
            raise ValueError(f"decimal: not a real number: {x!r}") from None
    sign, man, exp, _ = mpf  # exact (mpf.man_exp would drop the sign)
    if not man:
        if exp:  # mpmath encodes inf/nan as man == 0 with a special exponent
            raise ValueError(f"decimal: not finite: {x!r}")
        return None
    man = -man if sign else man
    return (man << exp, 1) if exp >= 0 else (man, 1 << -exp)


def _dyadic(x: Any) -> tuple[int, int, int] | None:
    """(num, den, e2) with x = num/den·2^e2 exactly (den > 0); ``None`` for zero.

    Unlike :func:`_ratio` it never forms 2^|e2|: an mpmath number keeps its binary exponent,
    which may have millions of digits (δ bounds of e^(−k²/(2v)) at huge ε), so printing it
    costs the same as printing 1e-30."""
    mpf = getattr(x, "_mpf_", None)
    if mpf is None:
        r = _ratio(x)
        return None if r is None else (r[0], r[1], 0)
    sign, man, exp, _ = mpf
    if not man:
        if exp:
            raise ValueError(f"decimal: not finite: {x!r}")
        return None
    return (-man if sign else man), 1, exp


def exact_fraction(x: Any) -> Fraction:
    """The exact rational value of a finite number (see the module docstring for the types).

    >>> import mpmath
    >>> exact_fraction(mpmath.mpf(0.1)) == Fraction(0.1), exact_fraction("1e-3")
    (True, Fraction(1, 1000))
    """
    r = _ratio(x)
    return Fraction(0) if r is None else Fraction(*r)


def half_width(c: Any) -> Fraction:
    """(upper − lower)/2 of an interval (anything with ``lower``/``upper``, or a pair), exactly.

    ``Certified.error`` is this half-width rounded to nearest at 512 bits; an error bound to be
    printed should start from the exact value."""
    lo, hi = _ends(c)
    return (exact_fraction(hi) - exact_fraction(lo)) / 2


def _sum_dyadic(lo: Any, hi: Any, sign: int) -> tuple[int, int, int] | None:
    """hi + sign·lo as (num, den, e2) exactly (see :func:`_dyadic`); ``None`` for zero.  Two mpmath
    numbers are added on their mantissas (no 2^|exponent| is formed); other types exactly as
    fractions."""
    a, b = _dyadic(hi), _dyadic(lo)
    if a is None and b is None:
        return None
    if b is None:
        return a
    if a is None:
        return (sign * b[0], b[1], b[2])
    if a[1] == 1 and b[1] == 1:  # both dyadic: align the binary exponents exactly
        e = min(a[2], b[2])
        num = (a[0] << (a[2] - e)) + sign * (b[0] << (b[2] - e))
        return (num, 1, e) if num else None
    f = exact_fraction(hi) + sign * exact_fraction(lo)
    return (f.numerator, f.denominator, 0) if f else None


def _ends(c: Any) -> tuple[Any, Any]:
    if hasattr(c, "lower") and hasattr(c, "upper"):
        return c.lower, c.upper
    lo, hi = c
    return lo, hi


# ---------------------------------------------------------------------- formatting
#: beyond |log10 x| > this, powers 10^e are not formed exactly (they would take seconds to
#: minutes at e ~ 1e7): the mantissa comes from high-precision binary arithmetic with a rigorous
#: relative margin, so directed results stay on their side (:func:`_huge_ratio`).
HUGE_EXPONENT = 4000


def _huge_ratio(num: int, den: int, n: int, mode: str, e2: int = 0) -> str:
    """:func:`decimal_ratio` of x = num/den·2^e2 when |log10 x| > HUGE_EXPONENT (any size of e2).

    log10|x| = log10(a/d) + e2·log10 2 is formed at p + 64 + bitlen(e2) bits (p = 4n + 96), so
    its absolute error stays below 2^−(p+60) however large e2 is; e10 = ⌊log10|x|⌋ and the
    mantissa m = 10^(log10|x| − e10) then have relative error < 2^−(p+48) (with the truncation
    of a and d to p + 64 leading bits), and a directed result is widened by 2^(16−p) on its side."""
    p = 4 * n + 96
    neg = num < 0
    want_up = (mode == "up") != neg  # magnitude rounded up?
    # truncate both integers to p + 64 leading bits (relative error < 2^−(p+63) each, inside the
    # margin below); converting multi-megabit ints directly is very slow
    a_, d_ = abs(num), den
    sa, sd = max(0, a_.bit_length() - p - 64), max(0, d_.bit_length() - p - 64)
    with mpmath.workprec(p + 64 + max(1, abs(e2)).bit_length()):
        x = mpmath.ldexp(mpmath.mpf(a_ >> sa) / mpmath.mpf(d_ >> sd), sa - sd)
        log10x = mpmath.log10(x) + e2 * mpmath.log10(2)
        e10 = int(mpmath.floor(log10x))
        m = mpmath.power(10, log10x - e10)
    with mpmath.workprec(p):
        m = +m
        while m >= 10:
            m, e10 = m / 10, e10 + 1
        while m < 1:
            m, e10 = m * 10, e10 - 1
        margin = mpmath.mpf(2) ** (16 - p)
        if mode == "nearest":
            q = int(mpmath.nint(m * 10 ** (n - 1)))
        elif want_up:
            q = int(mpmath.ceil(m * (1 + margin) * 10 ** (n - 1)))
        else:
            q = int(mpmath.floor(m * (1 - margin) * 10 ** (n - 1)))
            if q < 10 ** (n - 1):  # the margin took m below 1: n digits of the next decade down
                q, e10 = int(mpmath.floor(m * (1 - margin) * 10**n)), e10 - 1
    if q >= 10**n:
        q, e10 = -(-q // 10) if (mode != "nearest" and want_up) else q // 10, e10 + 1
    digits = str(q).rjust(n, "0")
    return f"{'-' if neg else ''}{digits[0]}.{digits[1:] or '0'}e{e10}"


def decimal_ratio(num: int, den: int, n: int, mode: str, e2: int = 0) -> str:
    """:func:`decimal_string` of num/den·2^e2 (den > 0, num ≠ 0), scientific notation."""
    if mode not in MODES:
        raise ValueError(f"decimal: mode must be one of {MODES}, got {mode!r}")
    a = abs(num)
    # e10 = ⌊log10 |x|⌋: estimate from bit lengths, then correct exactly
    bits = a.bit_length() - den.bit_length() + e2
    if abs(bits) > 4 * HUGE_EXPONENT or abs(e10 := math.floor(bits * math.log10(2))) > HUGE_EXPONENT:
        return _huge_ratio(num, den, n, mode, e2)
    if e2:  # |e2| < 4 · HUGE_EXPONENT here: cheap to fold in exactly
        num, den = (num << e2, den) if e2 > 0 else (num, den << -e2)
        a = abs(num)
    while a * 10 ** max(0, -e10) < den * 10 ** max(0, e10):
        e10 -= 1
    while a * 10 ** max(0, -(e10 + 1)) >= den * 10 ** max(0, e10 + 1):
        e10 += 1
    while True:
        s = n - 1 - e10  # scaled value x·10^s has n digits before the point
        qn, qd = (num * 10**s, den) if s >= 0 else (num, den * 10 ** (-s))
        if mode == "down":
            q = qn // qd
        elif mode == "up":
            q = -((-qn) // qd)
        else:
            q = (2 * qn + qd) // (2 * qd)
        digits = str(abs(q))
        if len(digits) <= n:
            break
        e10 += 1  # rounding carried into a new digit (e.g. 9.99… → 10.0)
    digits = digits.rjust(n, "0")
    sign = "-" if q < 0 else ""
    return f"{sign}{digits[0]}.{digits[1:] or '0'}e{e10}"


def _positional(s: str, n: int) -> str:
    """A scientific string of :func:`decimal_ratio` written positionally when its exponent is
    in [−5, n − 1] (same digits: the same exact value)."""
    if "e" not in s:
        return s
    mant, e = s.split("e")
    e10 = int(e)
    if not (-5 <= e10 < n):
        return s
    sign = "-" if mant.startswith("-") else ""
    digits = mant.lstrip("-").replace(".", "")
    if e10 < 0:
        return f"{sign}0.{'0' * (-e10 - 1)}{digits}"
    digits = digits.ljust(e10 + 1, "0")
    frac = digits[e10 + 1 :] or "0"
    return f"{sign}{digits[: e10 + 1]}.{frac}"


def _check_n(n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"decimal: the number of significant digits must be an int >= 1, got {n!r}")
    return n


def _notate(s: str, n: int, notation: str) -> str:
    if notation == "sci":
        return s
    if notation == "auto":
        return _positional(s, n)
    raise ValueError(f"decimal: notation must be 'sci' or 'auto', got {notation!r}")


def decimal_string(x: Any, n: int = DEFAULT_DIGITS, mode: str = "nearest", *, notation: str = "sci") -> str:
    """Exact ``n``-significant-digit decimal string of a finite real ``x``, rounded ``"down"``
    (towards −∞), ``"up"`` (towards +∞) or to ``"nearest"`` (ties towards +∞).

    Pure integer arithmetic on the exact value, so a directed result is on the stated side
    exactly (and about 10× faster than ``mpmath.nstr``).  Zero prints as ``"0.0"``.

    >>> decimal_string(Fraction(999999, 1000), 3, "up"), decimal_string(0, 5, "up")
    ('1.00e3', '0.0')
    """
    _check_n(n)
    if mode not in MODES:
        raise ValueError(f"decimal: mode must be one of {MODES}, got {mode!r}")
    r = _dyadic(x)
    if r is None:
        return "0.0"
    return _notate(decimal_ratio(r[0], r[1], n, mode, r[2]), n, notation)


def outward(x: Any, direction: int, n: int = DEFAULT_DIGITS, *, notation: str = "sci") -> str:
    """``x`` rounded outward: down if ``direction < 0`` (a lower bound), else up (an upper bound)."""
    return decimal_string(x, n, "down" if direction < 0 else "up", notation=notation)


def format_interval(c: Any, n: int = 20, *, notation: str = "sci") -> tuple[str, str]:
    """(lower rounded down, upper rounded up) of an interval — anything with ``lower``/``upper``
    (a :class:`accountant.Certified`) or a pair (lower, upper): the printed interval contains
    the exact one."""
    lo, hi = _ends(c)
    return (decimal_string(lo, n, "down", notation=notation), decimal_string(hi, n, "up", notation=notation))


def format_error_up(err: Any, n: int = 3) -> str:
    """An error bound rounded up to ``n`` digits; given an interval (``lower``/``upper``), its
    exact half-width (:func:`half_width`) is used rather than the rounded ``.error``."""
    if hasattr(err, "lower") and hasattr(err, "upper"):
        _check_n(n)
        r = _sum_dyadic(err.lower, err.upper, -1)  # upper − lower, exactly
        return "0.0" if r is None else decimal_ratio(r[0], r[1], n, "up", r[2] - 1)
    return decimal_string(err, n, "up")


def mid_decimal(c: Any, n: int = DEFAULT_DIGITS, *, notation: str = "sci") -> str:
    """The midpoint (lower + upper)/2 of an interval rounded to nearest (no bound: label it),
    computed as an exact ratio of integers without mpmath arithmetic.

    >>> mid_decimal((Fraction(1, 3), Fraction(2, 3)), 3)
    '5.00e-1'
    """
    _check_n(n)
    lo, hi = _ends(c)
    m1, m2 = getattr(lo, "_mpf_", None), getattr(hi, "_mpf_", None)
    if m1 is None or m2 is None:  # not both mpf: exact rational arithmetic
        return decimal_string((exact_fraction(lo) + exact_fraction(hi)) / 2, n, "nearest", notation=notation)
    s1, m1, e1, _ = m1
    s2, m2, e2, _ = m2
    if (not m1 and e1) or (not m2 and e2):
        raise ValueError(f"decimal: not finite: {c!r}")
    if not m1 and not m2:
        return "0.0"
    m1, m2 = (-m1 if s1 else m1), (-m2 if s2 else m2)
    if not m1:
        e1 = e2
    if not m2:
        e2 = e1
    e = min(e1, e2)
    num = (m1 << (e1 - e)) + (m2 << (e2 - e))  # lower + upper = num·2^e
    if not num:
        return "0.0"
    s = decimal_ratio(num, 1, n, "nearest", e - 1)  # halved
    return _notate(s, n, notation)
