"""One lock around the process-wide working precision.

Arb (python-flint's ``ctx.prec``) and mpmath (``mp.prec``) keep their working precision in a
single process-wide state, which the engines set and restore around their steps.  Two threads
computing at once would each run at the other's precision — silently different intervals.  Every
public entry point of :class:`accountant.Composition` therefore holds :data:`PRECISION_LOCK` for
the whole call: threads get exactly the single-threaded answers, one call after another (the
numeric core holds the GIL anyway, so little parallelism is lost).  For parallel work use
processes, as ``optimizer.jobs.runner`` does.  The lock is re-entrant, so public calls may nest.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import TypeVar, cast

__all__ = ["PRECISION_LOCK", "serialized"]

#: held by every public accountant call that touches the working precision (re-entrant)
PRECISION_LOCK = threading.RLock()

F = TypeVar("F", bound=Callable[..., object])


def serialized(fn: F) -> F:
    """``fn`` run while holding :data:`PRECISION_LOCK`.

    >>> @serialized
    ... def f(x):
    ...     return PRECISION_LOCK._is_owned()
    >>> f(1)
    True
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with PRECISION_LOCK:
            return fn(*args, **kwargs)

    return cast(F, wrapper)
