"""What a result depends on, as hashes: code version, run inputs, sealed run summaries.

A run's ``optimize.json`` is *sealed* (:func:`seal`): it stores ``run_inputs`` (scenario,
allocation content hash, target ε/δ/conversion, weights, code version, result format),
``run_hash`` (sha256 of the canonical JSON of ``run_inputs``) and ``checksum`` (sha256 of the
canonical JSON of the whole summary without the checksum).  :func:`check_run` compares a stored
summary with the inputs a reader expects and returns the differences, so a report never shows
a run made for another promise, allocation, weighting or by other code, nor a hand-written or
edited ``optimize.json``.

The *code version* (:func:`code_version`) is the sha256 of the source files that compute the
numbers (``accountant/*.py`` and the computing modules of ``optimizer/``), plus the package
version; the job cache of :mod:`optimizer.jobs.runner` checks it too.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import optimizer
from optimizer.environment import package_version
from optimizer.search.target import target_from_allocation

__all__ = [
    "RESULT_FORMAT",
    "allocation_digest",
    "canonical",
    "check_run",
    "code_version",
    "file_code_version",
    "run_inputs",
    "scenario_run_inputs",
    "seal",
]

#: Format version of ``optimize.json`` (bump when its meaning or fields change).
RESULT_FORMAT = 4  # 3: delta_grid.csv and confirm_pairs.csv; 4: accounting.json (the report's accounting)

_ROOT = Path(optimizer.__file__).resolve().parent.parent
#: optimizer sources that only present or move numbers, relative to ``optimizer/`` (a folder ends
#: in "/"): the CLI, the report, formatting, atomic writes and the job runner.  Every other optimizer
#: module is in the code version, so a new computing module changes it without being listed.
PRESENTATION = (
    "__init__.py",
    "atomic.py",
    "cli/",
    "formatting.py",
    "jobs/runner.py",
    "workflow.py",
    "report/",
)


def compute_modules() -> tuple[str, ...]:
    """The optimizer sources of the code version, relative to ``optimizer/`` (all but :data:`PRESENTATION`)."""
    root = _ROOT / "optimizer"
    names = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py"))
    return tuple(n for n in names if not any(n == q or (q.endswith("/") and n.startswith(q)) for q in PRESENTATION))


def canonical(obj: Any) -> str:
    """Canonical JSON text (sorted keys, no spaces; non-JSON values as ``str``)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _sha(text: str | bytes) -> str:
    return hashlib.sha256(text if isinstance(text, bytes) else text.encode("utf-8")).hexdigest()


def sources_hash(files: Sequence[str | Path]) -> str:
    """sha256 over the given source files (each path relative to the project, then its bytes): the
    one code hash (:func:`code_version` adds the package version to it)."""
    return _files_hash(tuple(str(Path(f).resolve()) for f in files))


@functools.cache
def _files_hash(files: tuple[str, ...]) -> str:
    h = hashlib.sha256()
    for name in files:
        p = Path(name)
        h.update(str(p.relative_to(_ROOT) if p.is_relative_to(_ROOT) else p.name).encode() + b"\0")
        if not p.is_file():  # a moved module must not drop out of the hash silently
            raise FileNotFoundError(f"code version: source file {name} does not exist")
        h.update(p.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def _compute_files(extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    files = sorted(str(p) for p in (_ROOT / "accountant").glob("*.py"))
    files += [str(_ROOT / "optimizer" / m) for m in compute_modules()]
    for e in extra:
        if e not in files:
            files.append(e)
    return tuple(files)


def code_version(*extra_files: str | Path) -> str:
    """sha256 of the package version and the sources that compute results (accountant/*.py,
    the computing optimizer modules, and ``extra_files``)."""
    files = _compute_files(tuple(str(Path(f).resolve()) for f in extra_files))
    return _sha(f"census-plb {package_version()}\0{_files_hash(files)}")


def file_code_version(module_file: str | Path | None) -> str:
    """:func:`code_version` including one more source file (e.g. a job function's module)."""
    return code_version(module_file) if module_file else code_version()


def allocation_digest(alloc) -> str:
    """sha256 of an allocation's content: run type, geolevels in order, queries with exact ρ."""
    doc = {
        "run_type": alloc.run_type,
        "levels": [[lv.name, [[q, str(r)] for q, r in zip(lv.queries, lv.rho)]] for lv in alloc.levels],
    }
    return _sha(canonical(doc))


def run_inputs(*, scenario: Mapping | None, alloc, target, weights: Mapping) -> dict:
    """Everything an optimizer run's results depend on (JSON-ready)."""
    sc = None
    if scenario is not None:
        sc = {k: v for k, v in dict(scenario).items() if k != "description"}
    return {
        "result_format": RESULT_FORMAT,
        "code_version": code_version(),
        "package_version": package_version(),
        "scenario": sc,
        "allocation": {"name": alloc.name, "sha256": allocation_digest(alloc)},
        "target": target.as_dict(),
        "weights": {f"{g}/{q}": str(weights[(g, q)]) for g, q, _ in alloc.items()},
    }


def scenario_run_inputs(sc) -> dict:
    """The :func:`run_inputs` that ``census-plb optimize --scenario`` would record for ``sc``."""
    alloc = sc.load_allocation()
    target = target_from_allocation(alloc, delta=sc.target_delta_text, conversion=sc.conversion)
    weights = {(g, q): sc.weight(g, q) for g, q, _ in alloc.items()}
    return run_inputs(scenario=sc.as_dict(), alloc=alloc, target=target, weights=weights)


def _normal(doc: Mapping) -> dict:
    """``doc`` as it reads back from its JSON file (so hashes agree before and after writing)."""
    return json.loads(json.dumps(doc, default=str))


def _checksum(doc: Mapping) -> str:
    return _sha(canonical({k: v for k, v in _normal(doc).items() if k != "checksum"}))


def seal(summary: Mapping, inputs: Mapping) -> dict:
    """``summary`` with ``run_inputs``, ``run_hash`` and ``checksum`` added."""
    out = dict(summary)
    out["result_format"] = RESULT_FORMAT
    out["run_inputs"] = _normal(inputs)
    out["run_hash"] = _sha(canonical(out["run_inputs"]))
    out["checksum"] = _checksum(out)
    return out


def _diff(stored: Any, expected: Any, path: str, out: list[str]) -> None:
    if isinstance(stored, dict) and isinstance(expected, dict):
        for k in sorted(set(stored) | set(expected)):
            _diff(stored.get(k), expected.get(k), f"{path}.{k}" if path else k, out)
        return
    if stored != expected:

        def show(v):
            t = "absent" if v is None else (v if isinstance(v, str) else canonical(v))
            return t if len(t) <= 40 else t[:16] + "…"

        out.append(f"{path}: run has {show(stored)}, now {show(expected)}")


def check_run(doc: Mapping | None, expected: Mapping | None = None) -> list[str]:
    """Problems of a stored run summary (empty list: valid and, if ``expected`` is given,
    made for exactly those inputs)."""
    if not isinstance(doc, Mapping):
        return ["not a JSON object"]
    missing = [k for k in ("run_inputs", "run_hash", "checksum") if k not in doc]
    if missing:
        return [
            f"no valid run hash ({', '.join(missing)} missing): hand-written, incomplete, or written by an "
            "older census-plb"
        ]
    if doc.get("checksum") != _checksum(doc):
        return ["its content was changed after it was written (checksum mismatch)"]
    inputs = doc.get("run_inputs")
    if not isinstance(inputs, Mapping) or doc.get("run_hash") != _sha(canonical(_normal(inputs))):
        return ["run_hash does not match its run_inputs"]
    if expected is None:
        return []
    out: list[str] = []
    _diff(_normal(inputs), _normal(expected), "", out)
    return out


class StaleRunError(ValueError):
    """A run directory's results are not for the inputs asked for (or cannot be trusted)."""


def check_run_dir(run_dir: str | Path, doc: Mapping | None, sc) -> list[str]:
    """Problems of ``run_dir``'s optimize.json (``doc``) and output files for scenario ``sc``."""
    problems = check_run(doc, scenario_run_inputs(sc))
    if problems or not isinstance(doc, Mapping):
        return problems
    for name, digest in sorted((doc.get("outputs") or {}).items()):
        p = Path(run_dir) / name
        if not p.is_file():
            problems.append(f"{name} is missing")
        elif _sha(p.read_bytes()) != digest:
            problems.append(f"{name} was changed after optimize.json was written")
    return problems


def stale_message(run_dir: str | Path, sc, problems: list[str]) -> str:
    """One line: which run, what differs, and how to rerun."""
    shown = "; ".join(problems[:4]) + (f"; … ({len(problems) - 4} more)" if len(problems) > 4 else "")
    src_path = Path(str(sc.source))
    src = sc.name if src_path.parent.name == "scenarios" and src_path.stem == sc.name else str(src_path)
    return (
        f"{Path(run_dir) / 'optimize.json'} cannot be used for scenario {sc.name}: {shown}; "
        f"recompute with `census-plb report --scenario {src} --run-dir {run_dir} --force` "
        f"(or `census-plb optimize --scenario {src} --out {run_dir}`)"
    )
