"""Exact rational inputs.

Every privacy-relevant number (budgets ρ, variances σ², weights) enters the library as a
:class:`fractions.Fraction`.  This module is the single gate: it accepts ``int``,
``Fraction`` and exact decimal/rational strings, and refuses ``float`` unless the caller
states a rounding direction through :func:`from_float`.

>>> to_fraction("10000/73")
Fraction(10000, 73)
>>> to_fraction("0.0073")
Fraction(73, 10000)
>>> to_fraction(0.1)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
TypeError: value: got float 0.1; floats are not exact. Pass an int, a Fraction or an exact string like '1/10', ...
>>> from_float(0.1, rounding="down") < Fraction(1, 10) < from_float(0.1, rounding="up")
True
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction
from numbers import Rational

__all__ = ["ExactLike", "cut", "from_float", "to_fraction"]

ExactLike = int | Fraction | str


def to_fraction(value: object, name: str = "value") -> Fraction:
    """Convert an exact value to ``Fraction``; refuse floats and anything inexact.

    Args:
        value: ``int``, ``Fraction`` (or any ``numbers.Rational``), ``Decimal``, or a string
            such as ``"10000/73"``, ``"0.0073"`` or ``"7.3e-3"``.
        name: the parameter name used in error messages.

    Raises:
        TypeError: for floats, bools and unsupported types.
        ValueError: for strings that do not parse as an exact finite rational.
    """
    if isinstance(value, bool):
        raise TypeError(f"{name}: got bool {value!r}; expected an exact number")
    if isinstance(value, Fraction):
        return value
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, Rational):
        return Fraction(int(value.numerator), int(value.denominator))
    if isinstance(value, float):
        raise TypeError(
            f"{name}: got float {value!r}; floats are not exact. Pass an int, a Fraction or an "
            "exact string like '1/10', or use accountant.exact.from_float(x, rounding='up'|'down')"
        )
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"{name}: got non-finite Decimal {value!r}")
        _check_exponent(int(value.as_tuple().exponent), value, name)
        return Fraction(value)
    if isinstance(value, str):
        text = value.strip()
        m = _EXPONENT.search(text)
        if m:
            _check_exponent(int(m.group(1)) if len(m.group(1)) <= 12 else 10**12, value, name)
        try:
            frac = Fraction(text)
        except (ValueError, ZeroDivisionError) as exc:
            raise ValueError(f"{name}: cannot parse {value!r} as an exact rational ({exc})") from None
        return frac
    raise TypeError(f"{name}: got {type(value).__name__} {value!r}; expected int, Fraction or exact string")


#: the largest decimal exponent accepted in an exact input ("1e100000"): beyond it the exact
#: integer 10^e alone would take gigabytes and minutes to form
MAX_DECIMAL_EXPONENT = 100_000
_EXPONENT = re.compile(r"[eE]\s*([+-]?\d+)\s*$")


def cut(text: str, limit: int = 40) -> str:
    """``text`` cut to ``limit`` characters (an input of 10^5 digits is not echoed whole in an error).

    >>> cut("1e" + "9" * 50)
    '1e99999999999999999999999999999999999...'
    """
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def _check_exponent(exponent: int, value: object, name: str) -> None:
    if abs(exponent) > MAX_DECIMAL_EXPONENT:
        shown = cut(repr(value))
        raise ValueError(
            f"{name}: the decimal exponent of {shown} is beyond ±{MAX_DECIMAL_EXPONENT} (not an exact input "
            "this library can form)"
        )


def from_float(x: float, rounding: str, name: str = "value") -> Fraction:
    """Convert a float to a ``Fraction`` with an explicit, caller-chosen rounding direction.

    The binary value of ``x`` is exact, but the float usually stands for a decimal the user
    typed (``0.1``).  ``rounding='up'`` returns the float's exact value nudged one ulp up
    (a rational that is certainly ``>=`` the number the user meant, to within one ulp), and
    ``'down'`` one ulp down.  Use ``'up'`` for quantities where larger is the safe side
    (variances σ²), ``'down'`` where smaller is safe (budgets ρ).
    """
    if rounding not in ("up", "down"):
        raise ValueError(f"{name}: rounding must be 'up' or 'down', got {rounding!r}")
    if not isinstance(x, (float, int)) or isinstance(x, bool):
        raise TypeError(f"{name}: from_float expects a float, got {type(x).__name__}")
    if not math.isfinite(x):
        raise ValueError(f"{name}: got non-finite float {x!r}")
    if x == 0:
        return Fraction(0)  # ±0.0 is exact: nothing to nudge (so σ² = −0.0 is refused as 0)
    nudged = math.nextafter(float(x), math.inf if rounding == "up" else -math.inf)
    return Fraction(nudged)
