"""What a run directory gives the report (:class:`RunInputs`, read through the one schema of
:mod:`optimizer.pipeline.result`; per-pair files vetted by their sealed inputs) and the tolerance
flags of everything the report shows as certified.
"""

from __future__ import annotations

import csv
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optimizer.census.allocation import Allocation
from optimizer.jobs.profile import certified_tolerance_met, check_profile_files, epsilon_tolerance_met
from optimizer.jobs.provenance import allocation_digest
from optimizer.pipeline.accounting import DELTA_RTOL, DELTA_TOL, EPS_TOL, Accounting
from optimizer.pipeline.result import RunResult


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
    """What an optimizer / pairs run directory provides (all optional)."""

    directory: Path | None
    optimize: dict | None = None
    per_query: list[dict] | None = None
    curves: list[dict] | None = None
    tradeoff: list[dict] | None = None
    pairs: list[dict] | None = None
    pairs_file: str | None = None
    #: the sealed inputs of the pairs file (allocation hash, code version), when it checked out
    pairs_inputs: dict | None = None
    #: why a per-pair file found in the directory was not used (shown in the report)
    pairs_ignored: list[str] = field(default_factory=list)
    #: which allocation the per-pair results are of ("the optimized allocation", …)
    pairs_of: str | None = None
    #: the run's side-effects table (optimizer.pipeline.side_effects) and final confirmation, one row per pair
    delta_grid: list[dict] | None = None
    confirm_pairs: list[dict] | None = None
    #: the run's accounting (:meth:`optimizer.pipeline.accounting.Accounting.as_json`), when stored
    accounting: dict | None = None
    hashes: dict[str, str] = field(default_factory=dict)


def _read_csv(path: Path) -> list[dict]:
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


#: keys of optimize.json that measure the machine, not the result (and the file checksum, which
#: covers them): left out of the report, so a deliberate regeneration of the same inputs by the
#: same code gives byte-identical files
TIMING_KEYS = frozenset({"seconds", "confirm_seconds", "trials_per_minute", "checksum"})


def _result_hash(doc: dict) -> str:
    """sha256 of an optimize.json document without its :data:`TIMING_KEYS` (canonical JSON)."""
    body = {k: v for k, v in doc.items() if k not in TIMING_KEYS}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


def read_run(run_dir: str | Path | None) -> RunInputs:
    """Read the optimizer's output files (contract: optimize.json, per_query.csv, curves.csv,
    tradeoff.csv) and per-pair δ results (``*_pairs.csv``: pair_i, pair_j, eps, delta…)."""
    if run_dir is None or not Path(run_dir).is_dir():
        return RunInputs(None)

    d = Path(run_dir)
    run = RunInputs(d)
    stored = RunResult.read(d)  # the one schema of a run directory (optimizer/pipeline/result.py)
    if stored is not None:
        run.optimize = stored.summary
        run.hashes["optimize.json (timings excluded)"] = _result_hash(stored.summary)
        run.delta_grid = stored.delta_grid or None
        run.confirm_pairs = stored.confirm_pairs or None
        run.accounting = stored.accounting
    for name, attr in (("per_query.csv", "per_query"), ("curves.csv", "curves"), ("tradeoff.csv", "tradeoff")):
        p = d / name
        if p.is_file():
            setattr(run, attr, getattr(stored, attr) if stored is not None else _read_csv(p))
            run.hashes[name] = _sha256(p)

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
