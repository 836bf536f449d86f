"""The one schema of an optimizer run on disk: :class:`RunResult` and its files.

A run directory holds (:data:`RUN_FILES`):

* ``optimize.json`` — the summary (:func:`optimizer.pipeline.stages.optimize` lists its keys), sealed
  by :func:`optimizer.jobs.provenance.seal` with the hash of everything the run depends on and the
  sha256 of each CSV/TOML file below (``outputs``);
* ``per_query.csv`` — one row per (geolevel, query): baseline ρ and σ², σ² of the uniform
  rescale, of the calibrated zCDP-optimum shape and of the optimized allocation, drops in %;
* ``per_geolevel.csv`` — the same summed per geolevel, with baseline and optimized ρ;
* ``curves.csv`` — exact δ(ε) of the proxy pair, baseline and optimized, beside the zCDP claim;
* ``tradeoff.csv`` — the proxy pair's trade-off curves (long format: ``curve``, ``zeta``,
  ``alpha``, ``beta``, lower ends);
* ``delta_grid.csv`` — side effects at other δ: the proxy pair's exact δ of the baseline, the
  uniform rescale and the optimized allocation at each point of the old zCDP curve
  (:mod:`optimizer.pipeline.side_effects`);
* ``confirm_pairs.csv`` — the final all-pairs confirmation's δ of every pair (the report's
  worst-pair heat map);
* ``allocation_optimized.toml`` — the optimized allocation, exact fractions.

:meth:`RunResult.write` writes all of them atomically (never through a symbolic link, the
summary last, so a directory with an ``optimize.json`` is complete); :meth:`RunResult.read`
reads them back (CSV cells as strings) and says in one line which file is damaged.
The format version is :data:`optimizer.jobs.provenance.RESULT_FORMAT` (stored in the summary).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from optimizer.atomic import atomic_write_text, check_writable
from optimizer.jobs import provenance as P
from optimizer.pipeline.summary import RunSummary

__all__ = ["RUN_FILES", "TABLE_FILES", "RunResult"]

#: the CSV tables of a run, in the order they are written: (file name, RunResult attribute)
TABLE_FILES = (
    ("per_query.csv", "per_query"),
    ("per_geolevel.csv", "per_geolevel"),
    ("curves.csv", "curves"),
    ("tradeoff.csv", "tradeoff"),
    ("delta_grid.csv", "delta_grid"),
    ("confirm_pairs.csv", "confirm_pairs"),
)
#: every file of a run directory (the summary is written last)
RUN_FILES = (*(n for n, _ in TABLE_FILES), "allocation_optimized.toml", "accounting.json", "optimize.json")


def _csv_text(rows: list[dict]) -> str:
    """Rows as CSV text: floats with 17 significant digits (round-trip exact), ``\\n`` lines."""
    import pandas as pd  # noqa: PLC0415 - 0.4 s to import; only a caller asking for DataFrames pays it

    buf = io.StringIO()
    pd.DataFrame(rows).to_csv(buf, index=False, float_format="%.17g", lineterminator="\n")
    return buf.getvalue()


def _sha256(data: str | bytes) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


@dataclass
class RunResult:
    """One optimizer run: the summary, its tables and the optimized allocation.

    Attributes:
        summary: the ``optimize.json`` document (:class:`~optimizer.pipeline.summary.RunSummary`;
            JSON-ready; sealed when written or read).
        per_query, per_geolevel, curves, tradeoff: table rows (numbers when computed, strings
            when read back from disk).
        delta_grid: :func:`optimizer.pipeline.side_effects.delta_grid_rows` of the baseline, the uniform
            rescale and the optimized allocation (the proxy pair's exact δ on the old zCDP curve).
        confirm_pairs: the final all-pairs confirmation, one row per pair (``pair_i``, ``pair_j``,
            ``eps``, ``delta_lower``, ``delta_upper``, ``tolerance_met``, ``allocation``); empty
            when the confirmation was skipped.
        allocation_toml: the optimized allocation as TOML text.
        accounting: :meth:`optimizer.pipeline.accounting.Accounting.as_json` of the baseline's proxy
            pair (the zCDP claim against the exact δ and ε, the proxy's uniform rescale, the curves
            on the run's one ε grid): what the report presents, computed once by the pipeline.
        inputs: :func:`optimizer.jobs.provenance.run_inputs` of the run (what it depends on); sealed
            into the summary by :meth:`write`.
        directory: where it was read from or written to.
    """

    summary: RunSummary
    per_query: list[dict] = field(default_factory=list)
    per_geolevel: list[dict] = field(default_factory=list)
    curves: list[dict] = field(default_factory=list)
    tradeoff: list[dict] = field(default_factory=list)
    delta_grid: list[dict] = field(default_factory=list)
    confirm_pairs: list[dict] = field(default_factory=list)
    allocation_toml: str = ""
    accounting: dict[str, Any] | None = None
    inputs: Mapping[str, Any] | None = None
    directory: Path | None = None

    # ------------------------------------------------------------------ writing
    def file_texts(self) -> dict[str, str]:
        """``{file name: text}`` of the tables and the allocation (not the summary)."""
        out = {name: _csv_text(getattr(self, attr)) for name, attr in TABLE_FILES}
        out["allocation_optimized.toml"] = self.allocation_toml
        if self.accounting is not None:
            out["accounting.json"] = json.dumps(self.accounting, sort_keys=True, separators=(",", ":")) + "\n"
        return out

    def sealed_summary(self) -> RunSummary:
        """The summary with ``outputs`` (sha256 of each file) and the provenance seal."""
        texts = self.file_texts()
        summary = dict(self.summary)
        summary["outputs"] = {n: _sha256(t) for n, t in texts.items()}
        if self.inputs is None:
            raise ValueError("RunResult.write: the run's inputs are unknown (cannot seal its summary)")
        return cast(RunSummary, P.seal(summary, self.inputs))

    def write(self, out: str | Path) -> dict[str, Path]:
        """Write every file of :data:`RUN_FILES` into ``out``; returns ``{name: path}``.

        Each file is refused up front if it is a symbolic link, written atomically, and the
        summary goes last; ``self.summary`` becomes the sealed summary."""
        d = Path(out)
        for name in RUN_FILES:
            check_writable(d / name)
        texts = self.file_texts()
        sealed = self.sealed_summary()
        d.mkdir(parents=True, exist_ok=True)
        for name, text in texts.items():
            atomic_write_text(d / name, text)
        atomic_write_text(d / "optimize.json", self.summary_text(sealed) + "\n")
        self.summary, self.directory = sealed, d
        return {n: d / n for n in (*texts, "optimize.json")}

    @staticmethod
    def summary_text(summary: Mapping[str, Any]) -> str:
        """The summary as it is stored and printed (``--json``): indented JSON."""
        return json.dumps(summary, indent=2, default=str)

    # ------------------------------------------------------------------ reading
    @classmethod
    def read(cls, run_dir: str | Path) -> RunResult | None:
        """The run stored in ``run_dir`` (``None`` if it has no ``optimize.json``); tables that are
        absent read as empty. A damaged summary raises ``ValueError`` naming the file."""
        d = Path(run_dir)
        opt = d / "optimize.json"
        if not opt.is_file():
            return None
        try:
            summary = json.loads(opt.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(
                f"{opt}: not a complete optimizer output ({type(exc).__name__}: {exc}); "
                "the run was interrupted or the file damaged: rerun census-plb optimize "
                "(or report --force)"
            ) from None
        if not isinstance(summary, dict):
            raise ValueError(f"{opt}: expected a JSON object, got {type(summary).__name__}")
        res = cls(cast(RunSummary, summary), directory=d, inputs=summary.get("run_inputs"))
        for name, attr in TABLE_FILES:
            p = d / name
            if p.is_file():
                with open(p, encoding="utf-8", newline="") as fh:
                    setattr(res, attr, list(csv.DictReader(fh)))
        toml = d / "allocation_optimized.toml"
        if toml.is_file():
            res.allocation_toml = toml.read_text(encoding="utf-8")
        acc = d / "accounting.json"
        if acc.is_file():
            try:
                res.accounting = json.loads(acc.read_text(encoding="utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise ValueError(f"{acc}: damaged ({type(exc).__name__}: {exc}); rerun census-plb optimize") from None
        return res
