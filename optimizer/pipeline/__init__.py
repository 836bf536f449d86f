"""The pipeline: a scenario's path from its specification to a sealed run.

* :mod:`~optimizer.pipeline.stages` — :class:`RunSpec` and :func:`optimize`: the baseline, the
  uniform rescale, the zCDP optimum, the exact reallocation, the all-pairs confirmation and the
  tables, as one library call;
* :mod:`~optimizer.pipeline.side_effects` — each allocation's exact δ on the old zCDP curve;
* :mod:`~optimizer.pipeline.result` — :class:`RunResult`, the one schema of a run directory;
* :mod:`~optimizer.pipeline.accounting` — the proxy pair's accounting that the report presents.

From a sealed run to its report, run or reused: :mod:`optimizer.workflow` (above the report).
"""

from __future__ import annotations

from optimizer.pipeline.accounting import Accounting, compute_accounting
from optimizer.pipeline.result import RunResult
from optimizer.pipeline.stages import RunSpec, optimize, spec_for

__all__ = ["Accounting", "RunResult", "RunSpec", "compute_accounting", "optimize", "spec_for"]
