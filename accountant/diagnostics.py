"""What an engine did for one batch of thresholds: :class:`EngineDiagnostics`, attached to every
certified result (:class:`accountant.certified.Certified`), and :data:`BOUND_DIAGNOSTICS` for results
given without any engine batch.  A leaf module: it imports nothing from the accountant, so both the
results and the engines can name it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BOUND_DIAGNOSTICS", "EngineDiagnostics"]


@dataclass(frozen=True, slots=True)
class EngineDiagnostics:
    """What an engine did for one batch of thresholds (a small immutable snapshot).

    Returned by :meth:`Engine.diagnostics` for the engine's last batch, and attached to the
    results of :class:`accountant.composition.Composition` for the batch that produced them.
    """

    #: the engine kind: ``"trapezoid"``, ``"split"``, ``"pmf"``, ``"coarse"``; ``"bound"`` for a
    #: result given without any engine batch (the sub-Gaussian bound, or exact: β(0) = 1, β(1) = 0).
    engine: str
    #: tighter targets narrow this engine's intervals (False for the coarse sandwich and bounds).
    improvable: bool = True
    #: every tail of the batch met its engine target (half-width ≤ absolute target); ``None`` when
    #: not assessed (no batch yet, the inner parts of a split or sandwich, or a bound).  A result's
    #: own :attr:`~accountant.certified.Certified.tolerance_met` judges the *caller's* tolerance.
    tolerance_met: bool | None = None
    #: thresholds in the batch.
    thresholds: int = 0
    #: trapezoid nodes N (of the leaf engine for splits and sandwiches; the table length for pmf).
    n_nodes: int = 0
    #: nodes kept by the sieve (largest tilt group).
    kept_nodes: int = 0
    #: tilt groups of the trapezoid.
    tilt_groups: int = 0
    #: evaluations of the characteristic-function product.
    phi_evaluations: int = 0
    #: largest working precision (bits).
    precision_bits: int = 0
    #: engine batches behind a result (1 + refinements with tightened targets; 0 for a bound).
    batches: int = 1
    #: the call was answered by the per-call coarse fallback (the exact sieve was too wide for
    #: these thresholds), not by the composition's own engine.
    fallback: bool = False
    #: diagnostics of the inner engines (split: (U, V); coarse: (inner,)), not assessed.
    parts: tuple[EngineDiagnostics, ...] = ()


#: diagnostics of results given without integration (the sub-Gaussian bound exp(−k²/(2v)), or
#: an exact closed form).
BOUND_DIAGNOSTICS = EngineDiagnostics(engine="bound", improvable=False, batches=0)
