"""The explorer's "Export": the setting as a scenario the rest of census-plb runs.

:func:`write_scenario` writes, into one folder, ``<name>-allocation.toml`` (the page's allocation,
exact fractions, :meth:`~optimizer.census.allocation.Allocation.to_toml`) and ``<name>.toml`` (a
scenario of that allocation with the page's promise, conversion and objective and the source
scenario's weights, guard and seed). The scenario text is read back with
:func:`optimizer.scenario.parse_scenario` before anything is written, so an export that would not
load is refused, and both files are written atomically. :func:`report_command` is the
``census-plb report`` command line that makes its HTML report (run by the page in the background).
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from explorer.model import PagePromise
from optimizer.atomic import atomic_write_text
from optimizer.census.allocation import Allocation
from optimizer.scenario import Scenario, parse_scenario
from optimizer.search.objectives import get_objective

__all__ = ["Export", "report_command", "scenario_toml", "write_scenario"]

#: an export's name: what a scenario name may be (letters, digits, '-', '_', '.')
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$")


@dataclass(frozen=True)
class Export:
    """The files of one export."""

    name: str
    scenario: Path
    allocation: Path
    report_dir: Path
    run_dir: Path


def _q(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a TOML basic string is a JSON string


def scenario_toml(
    name: str, source: Scenario, allocation_file: str, promise: PagePromise, objective: str, description: str
) -> str:
    """The scenario text of an export (see the module docstring)."""
    if source.fan_outs is not None:
        raise ValueError(
            f"export: scenario {source.name!r} has its own [fan_outs]; copy that table into the exported file by hand"
        )
    get_objective(objective)
    lines = [
        f"# Scenario {_q(name)}: exported by the census-plb budget explorer from {_q(source.name)}",
        f"name = {_q(name)}",
        f"description = {_q(description)}",
        f"allocation = {_q(allocation_file)}",
        f"conversion = {_q(promise.conversion)}",
        f"target_delta = {_q(promise.delta)}",
    ]
    if promise.kind == "curve":
        lines += ['target = "curve"', "curve_deltas = [" + ", ".join(_q(d) for d in promise.curve_deltas) + "]"]
    lines += [
        f"trials = {source.trials}",
        f"seed = {source.seed}",
        f"objective = {_q(objective)}",
        f"pareto = {'true' if source.pareto else 'false'}",
        f'pareto_floor_percent = "{source.pareto_floor_percent}"',
    ]
    if source.search != "auto":
        lines.append(f"search = {_q(source.search)}")
    if source.neighbour_model != "census":
        lines.append(f"neighbour_model = {_q(source.neighbour_model)}")
    lines += ["", "[weights]"]
    for key, pairs in (("geolevel", source.geolevel_weights), ("query", source.query_weights)):
        lines.append(f"{key} = {{" + ", ".join(f'{_q(k)} = "{v}"' for k, v in pairs) + "}")
    return "\n".join(lines) + "\n"


def write_scenario(
    folder: str | Path,
    name: str,
    source: Scenario,
    allocation: Allocation,
    promise: PagePromise,
    objective: str,
    description: str = "",
) -> Export:
    """Write the export's allocation and scenario files into ``folder`` (see the module docstring).

    Raises:
        ValueError: a name that is not a scenario name, or a scenario text that does not load back.
    """
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise ValueError(f"export name {name!r}: use letters, digits, '-', '_' or '.' (at most 80 characters)")
    out = Path(folder)
    alloc_path, sc_path = out / f"{name}-allocation.toml", out / f"{name}.toml"
    text = scenario_toml(
        name,
        source,
        alloc_path.name,
        promise,
        objective,
        description or f"{source.name} as set in the budget explorer (promise: {promise.describe()})",
    )
    parsed = parse_scenario(text, str(sc_path), expect_name=name)  # refuse what would not load
    if (parsed.target_delta_text, parsed.conversion, parsed.objective) != (
        promise.delta,
        promise.conversion,
        objective,
    ):
        raise AssertionError("export: the scenario text does not say what the page shows")
    out.mkdir(parents=True, exist_ok=True)
    named = Allocation(allocation.levels, name, f"the budget explorer's setting on {source.name}", allocation.run_type)
    named.to_toml(alloc_path)
    atomic_write_text(sc_path, text)
    return Export(name, sc_path, alloc_path, out / name / "report", out / name / "run")


def report_command(export: Export) -> list[str]:
    """``census-plb report`` for the exported scenario (its run and report beside the files)."""
    return [
        sys.executable,
        "-m",
        "optimizer.cli",
        "report",
        "--scenario",
        str(export.scenario),
        "--run-dir",
        str(export.run_dir),
        "--out",
        str(export.report_dir),
    ]
