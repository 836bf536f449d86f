"""Human-readable reports of one scenario: what was promised, what is really guaranteed, how much
noise can go, where — with figures, tables and a provenance block.

:func:`build_report` writes, into ``runs/<scenario>/report/`` (or any ``out_dir``; the committed
``reports/<scenario>/`` only when asked, ``census-plb report --publish``), each file atomically and
never through a symbolic link:

* ``report.html`` — self-contained (CSS inline, figures embedded as base64 PNG), for a
  non-specialist reader;
* ``report.md`` — the same content in Markdown (figures linked as the PNG files next to it);
* ``fig_eps_delta.png``, ``fig_tradeoff.png``, ``fig_geolevel_drop.png``, ``fig_query_drop.png``
  and ``fig_pairs_heatmap.png`` (when per-pair results exist) — matplotlib, Agg backend;
* ``summary.csv``, ``per_geolevel.csv``, ``per_query.csv``, ``curves.csv``, ``tradeoff.csv``.

Inputs are the scenario (:mod:`optimizer.scenario`), the accounting-only view of it
(:class:`optimizer.pipeline.accounting.Accounting`: the zCDP claim against the exact certified curve of
the proxy pair and the uniform rescale, computed by the library — the report does no accounting
of its own) and, optionally, an optimizer run directory read through :mod:`optimizer.pipeline.result`
(``*_pairs.csv`` from ``census-plb pairs`` too).

The package, one idea per module: :mod:`~optimizer.report.inputs` (what a run directory gives),
:mod:`~optimizer.report.tables`, :mod:`~optimizer.report.figures`,
:mod:`~optimizer.report.provenance_block`, :mod:`~optimizer.report.document` (the content as
sections), :mod:`~optimizer.report.render` (HTML / Markdown from the templates in ``templates/``),
:mod:`~optimizer.report.build` (writing one report) and :mod:`~optimizer.report.comparison`.

Deterministic: the same inputs give byte-identical files (no clocks; PNG metadata stripped;
numbers printed with fixed significant digits).
"""

from optimizer.formatting import TOLERANCE_MARK, fmt, fmt_bound
from optimizer.report.build import build_report, check_report_outputs, default_comparison_dir, default_report_dir
from optimizer.report.comparison import comparison_row, write_comparison
from optimizer.report.document import release_pair_count
from optimizer.report.inputs import RunInputs, read_run
from optimizer.report.render import render_html, render_markdown

__all__ = [
    "TOLERANCE_MARK",
    "RunInputs",
    "build_report",
    "check_report_outputs",
    "comparison_row",
    "default_comparison_dir",
    "default_report_dir",
    "fmt",
    "fmt_bound",
    "read_run",
    "release_pair_count",
    "render_html",
    "render_markdown",
    "write_comparison",
]
