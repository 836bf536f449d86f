"""What a run directory gives the report (:class:`RunInputs`, read through the one schema of
:mod:`optimizer.pipeline.result`; per-pair files vetted by their sealed inputs) and the tolerance
flags of everything the report shows as certified.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optimizer.census.allocation import Allocation
from optimizer.jobs.profile import certified_tolerance_met, check_profile_files, epsilon_tolerance_met
from optimizer.jobs.provenance import allocation_digest
from optimizer.pipeline.accounting import DELTA_RTOL, DELTA_TOL, EPS_TOL, Accounting
from optimizer.pipeline.result import RunResult
from optimizer.pipeline.summary import RunSummary


def tolerance_flags(acc: Accounting, run: RunInputs | None = None) -> dict[str, bool]:
    """{result: tolerance met} of everything the report shows as certified: the proxy pair's δ at
    the promised ε and ε at the promised δ, the uniform rescale's δ, the curves computed here and
    (when a run directory gives per-pair results with a ``tolerance_met`` column) the pairs."""
    flags = {
        "exact δ at the promised ε": certified_tolerance_met(acc.delta_exact, DELTA_TOL, DELTA_RTOL),
        "exact ε at the promised δ": epsilon_tolerance_met(acc.eps_exact, EPS_TOL),
        "uniform-rescale δ at the promised ε": certified_tolerance_met(acc.uniform_delta, DELTA_TOL, DELTA_RTOL),
    }
    flags.update(acc.tolerance)
    if run is not None and run.pairs and "tolerance_met" in run.pairs[0]:
        bad = sum(1 for r in run.pairs if str(r.get("tolerance_met", "")).strip().lower() in ("false", "no", "0"))
        flags[
            f"per-pair δ ({run.pairs_file}; {bad} of {len(run.pairs)} rows missed)"
            if bad
            else f"per-pair δ ({run.pairs_file})"
        ] = not bad
    return flags


@dataclass
class RunInputs:
    """What the report gets from a run directory: the run itself (one :class:`RunResult`, the one
    schema of a run on disk; its tables are read through it, never copied) and the per-pair files
    found beside it, kept only when their sealed inputs check out."""

    directory: Path | None
    #: the run as stored (``None``: the directory holds no optimizer run)
    result: RunResult | None = None
    pairs: list[dict] | None = None
    pairs_file: str | None = None
    #: the sealed inputs of the pairs file (allocation hash, code version), when it checked out
    pairs_inputs: dict | None = None
    #: why a per-pair file found in the directory was not used (shown in the report)
    pairs_ignored: list[str] = field(default_factory=list)
    #: which allocation the per-pair results are of ("the optimized allocation", …)
    pairs_of: str | None = None
    #: sha256 of each file the report used (the summary's without its timings)
    hashes: dict[str, str] = field(default_factory=dict)

    # the run's parts, ``None`` when the run is absent or did not write that table
    @property
    def optimize(self) -> RunSummary | None:
        """The run's summary (``optimize.json``)."""
        return self.result.summary if self.result is not None else None

    def _table(self, name: str) -> list[dict] | None:
        return (getattr(self.result, name) or None) if self.result is not None else None

    @property
    def per_query(self) -> list[dict] | None:
        return self._table("per_query")

    @property
    def curves(self) -> list[dict] | None:
        return self._table("curves")

    @property
    def tradeoff(self) -> list[dict] | None:
        return self._table("tradeoff")

    @property
    def delta_grid(self) -> list[dict] | None:
        """The run's side-effects table (:mod:`optimizer.pipeline.side_effects`)."""
        return self._table("delta_grid")

    @property
    def confirm_pairs(self) -> list[dict] | None:
        """The run's final all-pairs confirmation, one row per pair."""
        return self._table("confirm_pairs")

    @property
    def accounting(self) -> dict | None:
        """The run's accounting (:meth:`optimizer.pipeline.accounting.Accounting.as_json`)."""
        return self.result.accounting if self.result is not None else None


def _read_csv(path: Path) -> list[dict]:
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


#: keys of optimize.json that measure the machine, not the result (and the file checksum, which
#: covers them): left out of the report, so a deliberate regeneration of the same inputs by the
#: same code gives byte-identical files
TIMING_KEYS = frozenset({"seconds", "confirm_seconds", "trials_per_minute", "checksum"})


def _result_hash(doc: Mapping[str, Any]) -> str:
    """sha256 of an optimize.json document without its :data:`TIMING_KEYS` (canonical JSON)."""
    body = {k: v for k, v in doc.items() if k not in TIMING_KEYS}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


def read_run(run_dir: str | Path | None) -> RunInputs:
    """Read the optimizer's output files (contract: optimize.json, per_query.csv, curves.csv,
    tradeoff.csv) and per-pair δ results (``*_pairs.csv``: pair_i, pair_j, eps, delta…)."""
    if run_dir is None or not Path(run_dir).is_dir():
        return RunInputs(None)

    d = Path(run_dir)
    stored = RunResult.read(d)  # the one schema of a run directory (optimizer/pipeline/result.py)
    run = RunInputs(d, stored)
    if stored is not None:
        run.hashes["optimize.json (timings excluded)"] = _result_hash(stored.summary)
        for name in ("per_query.csv", "curves.csv", "tradeoff.csv"):
            if (d / name).is_file():
                run.hashes[name] = _sha256(d / name)

    own = {"confirm_pairs.csv"}  # the run's own confirmation table, read above through RunResult
    for p in [q for q in sorted(d.glob("*_pairs.csv")) if q.name not in own] + sorted(d.glob("*/*_pairs.csv")):
        rel = str(p.relative_to(d))
        inputs, problems = check_profile_files(p)
        if problems:  # never show per-pair numbers that are edited, orphaned or from other code
            run.pairs_ignored.append(f"{rel}: {'; '.join(problems)}")
            continue
        rows = _read_csv(p)
        if rows and {"pair_i", "pair_j", "delta"} <= set(rows[0]):
            run.pairs, run.pairs_file, run.pairs_inputs = rows, rel, inputs
            run.hashes[rel] = _sha256(p)
            break
        run.pairs_ignored.append(f"{rel}: no pair_i, pair_j, delta columns")
    return run


def _optimized_allocation(run: RunInputs):
    """The run's ``allocation_optimized.toml`` as an Allocation (``None`` when absent)."""
    if run.directory is None or not (run.directory / "allocation_optimized.toml").is_file():
        return None

    return Allocation.from_toml(run.directory / "allocation_optimized.toml")


def vet_pairs(run: RunInputs, allocations: dict[str, Any]) -> None:
    """Keep ``run``'s per-pair results only if they were computed for one of ``allocations``
    (``{label: Allocation}``, e.g. the baseline and the optimized allocation); else move them to
    ``run.pairs_ignored`` with the reason. Sets ``run.pairs_of`` to the matching label."""
    if not run.pairs:
        return
    have = ((run.pairs_inputs or {}).get("allocation") or {}).get("sha256")
    for label, alloc in allocations.items():
        if alloc is not None and allocation_digest(alloc) == have:
            run.pairs_of = label
            return
    name = ((run.pairs_inputs or {}).get("allocation") or {}).get("name", "?")
    run.pairs_ignored.append(
        f"{run.pairs_file}: computed for allocation {name!r}, which is none of "
        + ", ".join(label for label, a in allocations.items() if a is not None)
        + " (its content hash differs)"
    )
    run.pairs = run.pairs_file = run.pairs_inputs = None


def _cell(row: dict, name: str, where: str):
    """Column ``name`` of a row of a run's table (``None`` when empty); a row without that
    column is not of this schema (optimizer.pipeline.result) and is refused, naming the table."""
    if name not in row:
        raise ValueError(f"{where}: no column {name!r} (columns: {', '.join(row)}); not a run of this version")
    v = row[name]
    return None if v in (None, "") else v
