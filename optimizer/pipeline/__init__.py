"""The pipeline: a scenario's path from its specification to a sealed run and its report.

* :mod:`~optimizer.pipeline.stages` — :class:`RunSpec` and :func:`optimize`: the baseline, the
  uniform rescale, the zCDP optimum, the exact reallocation, the all-pairs confirmation and the
  tables, as one library call;
* :mod:`~optimizer.pipeline.side_effects` — each allocation's exact δ on the old zCDP curve;
* :mod:`~optimizer.pipeline.result` — :class:`RunResult`, the one schema of a run directory;
* :mod:`~optimizer.pipeline.accounting` — the proxy pair's accounting that the report presents;
* :mod:`~optimizer.pipeline.run` — one scenario from its run to its report (run or reuse a sealed
  run, then render); not re-exported here, since it calls the report, which reads this package.
"""

from __future__ import annotations

from optimizer.pipeline.accounting import Accounting, compute_accounting
from optimizer.pipeline.result import RunResult
from optimizer.pipeline.stages import RunSpec, optimize, spec_for

__all__ = ["Accounting", "RunResult", "RunSpec", "compute_accounting", "optimize", "spec_for"]
