"""The report's provenance table: input hashes, the run's seed and tolerances, versions."""

from __future__ import annotations

import json
from pathlib import Path

from optimizer import formatting
from optimizer.census import allocation as am
from optimizer.environment import versions
from optimizer.jobs.provenance import sources_hash
from optimizer.pipeline import accounting
from optimizer.pipeline.accounting import DELTA_RTOL, DELTA_TOL, EPS_TOL, Accounting
from optimizer.report.inputs import RunInputs, _sha256

_ROOT = Path(__file__).resolve().parent.parent.parent


def _versions() -> dict[str, str]:
    """The versions of what computed and printed this report (:func:`optimizer.environment.versions`)."""
    return versions(("census-plb", "numpy", "mpmath", "python-flint", "matplotlib"))


def _code_hash() -> str:
    """sha256 over the accountant sources, the accounting-only view and the report package (what
    computed and printed the numbers; :func:`optimizer.jobs.provenance.sources_hash`)."""
    opt = _ROOT / "optimizer"
    return sources_hash(
        [
            *sorted((_ROOT / "accountant").glob("*.py")),
            Path(accounting.__file__),
            Path(formatting.__file__),
            *sorted((opt / "report").glob("*.py")),
            *sorted((opt / "report" / "templates").iterdir()),
        ]
    )


def _allocation_file(sc) -> Path | None:
    """The file of scenario ``sc``'s allocation: a built-in's data file, or the scenario's path (a
    relative one is relative to the scenario file, as :meth:`optimizer.scenario.Scenario.load_allocation`
    reads it); ``None`` when there is no such file."""
    entry = getattr(am, "_BUILTINS", {}).get(sc.allocation)
    if entry:
        return Path(am.__file__).resolve().parents[1] / "data" / "census2020" / entry[0]
    p = Path(sc.allocation)
    if not p.is_absolute() and sc.source not in ("<text>", "<built-in>", ""):
        p = Path(sc.source).parent / p
    return p if p.is_file() else None


def inputs_record(acc: Accounting) -> dict[str, str | None]:
    """The report's inputs as a machine-readable record (written as ``provenance.json``): the scenario
    and the sha256 of its file, the allocation and the sha256 of its file (``None`` when not a file),
    and the hash of the code that printed the report.  ``scenario compare`` matches reports on it."""
    sc = acc.scenario
    af = _allocation_file(sc)
    return {
        "scenario": sc.name,
        "scenario_file_sha256": sc.sha256,
        "allocation": sc.allocation,
        "allocation_sha256": _sha256(af) if af is not None else None,
        "report_code_hash": _code_hash(),
    }


def provenance(acc: Accounting, run: RunInputs) -> list[tuple[str, str]]:
    sc = acc.scenario
    rows: list[tuple[str, str]] = []
    src = Path(sc.source)
    rows.append(("scenario file", f"scenarios/{src.name} (sha256 {sc.sha256})"))
    af = _allocation_file(sc)
    if af is not None:
        rows.append(("allocation", f"{sc.allocation}: {af.name} (sha256 {_sha256(af)})"))
    for name, h in sorted(run.hashes.items()):
        rows.append((f"run input {name}", f"sha256 {h}"))
    if run.directory is None or run.optimize is None:
        rows.append(("mode", "accounting-only (no optimizer output): proxy pair and uniform rescale computed here"))
    o = run.optimize or {}
    for key in (
        "seed",
        "git_commit",
        "config_hash",
        "run_hash",
        "tolerances",
        "versions",
        "study_name",
        "trials_run",
        "best_trial",
        "n_pairs_confirmed",
        "worst_pair",
        "worst_pair_delta",
        "worst_pair_certain",
        "release_delta_interval",
        "pairs_not_exact",
        "pairs_not_exact_planned",
        "target_epsilon",
        "target_delta",
        "objective",
    ):
        if key in o:
            v = o[key]
            rows.append((f"optimizer {key}", v if isinstance(v, str) else json.dumps(v, sort_keys=True)))
    if "seed" not in o:
        rows.append(("scenario seed / trials", f"{sc.seed} / {sc.trials}"))
    rows.append(
        (
            "accountant tolerances (this report)",
            f"delta: abs {DELTA_TOL:g}, rel {DELTA_RTOL:g}; epsilon bisection {EPS_TOL:g}; "
            "uniform rescale: optimizer.search.uniform_rescale (exact c, the optimizer's stage 1)",
        )
    )
    rows.append(("code hash (accountant + report)", _code_hash()))
    rows.append(("versions (this report)", ", ".join(f"{k} {v}" for k, v in _versions().items())))
    return rows
