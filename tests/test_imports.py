"""No import cycle among the project's modules (issue 14 item 6).

Two checks:

* static: every module of ``accountant``, ``optimizer`` and ``scenarios`` is parsed with ``ast``
  and its *module-level* imports of project modules give a graph that must have no cycle.
  Imports under ``if TYPE_CHECKING:`` are left out (they never run).  Imports inside functions
  are left out too, on purpose: they run only when the function is called, after every module
  has finished initialising, so they cannot see a half-initialised module (the project uses them
  to keep light modules light, e.g. ``optimizer.census.pairs`` imports the accountant lazily).
  ``from pkg import submodule`` is an edge to the submodule only (it needs the package object,
  not the package's ``__init__`` to have run); ``from pkg import name`` is an edge to ``pkg``.
  The layering that does matter at any level is checked separately: the accountant (pure
  mathematics) imports nothing from ``optimizer`` or ``scenarios``, not even inside a function.
* dynamic: every module is imported alone, as if in a fresh interpreter.  One subprocess does
  them all: before each import it removes every project module from ``sys.modules`` (the
  third-party libraries stay loaded, which keeps the whole check to a few seconds), so each
  module initialises the project from scratch in its own import order.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("accountant", "optimizer", "scenarios")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {
    _module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py")) if p.name != "__main__.py"
}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _module_level_imports(stmts: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """Imports that run when the module is imported: top level, and inside module-level
    ``if`` (except ``if TYPE_CHECKING:``), ``try`` and ``with`` blocks; not inside functions
    or classes' methods."""
    out: list[ast.Import | ast.ImportFrom] = []
    for node in stmts:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                out += _module_level_imports(node.body)
            out += _module_level_imports(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, *(h.body for h in node.handlers), node.orelse, node.finalbody):
                out += _module_level_imports(block)
        elif isinstance(node, (ast.With, ast.ClassDef)):
            out += _module_level_imports(node.body)
    return out


def _all_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The project modules an import statement in ``module`` needs initialised."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name in MODULES}
    if node.level:
        base = module.split(".")
        if MODULES[module].name != "__init__.py":
            base = base[:-1]  # relative to the module's package
        base = base[: len(base) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    out = set()
    for alias in node.names:
        sub = f"{source}.{alias.name}"
        if sub in MODULES:
            out.add(sub)  # a submodule
        elif source in MODULES:
            out.add(source)  # a name defined by the module (or the package's __init__)
    return out | _outer_packages(module, out)


def _outer_packages(module: str, targets: set[str]) -> set[str]:
    """Importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__`` first: those packages are
    edges too, except the importer's own packages (they are initialising already when it runs,
    so a package's modules may import each other through it)."""
    own = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1)}
    if MODULES.get(module, Path()).name == "__init__.py":
        own.add(module)
    out = set()
    for t in targets:
        parts = t.split(".")
        out |= {p for p in (".".join(parts[:i]) for i in range(1, len(parts))) if p in MODULES and p not in own}
    return out


def _graph(imports_of) -> dict[str, set[str]]:
    graph = {}
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        graph[name] = {t for node in imports_of(tree) for t in _targets(name, node)} - {name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
    return found


def _describe(graph: dict[str, set[str]], comp: list[str]) -> str:
    return "; ".join(f"{m} -> {', '.join(sorted(graph[m] & set(comp)))}" for m in comp)


def test_the_module_list_is_complete():
    assert {"accountant", "accountant.composition", "optimizer.cli.main", "optimizer.cli.commands.account"} <= set(
        MODULES
    )
    assert "optimizer.scenario" in MODULES and len(MODULES) > 30


def test_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_relative_imports_resolve():
    tree = ast.parse("from . import bounds\nfrom .certified import Certified\nfrom accountant import Composition\n")
    targets = [_targets("accountant.quadrature", n) for n in _all_imports(tree)]
    assert targets == [{"accountant.bounds"}, {"accountant.certified"}, {"accountant"}]
    tree = ast.parse("from . import gdp\nfrom .composition import Composition\n")
    assert [_targets("accountant", n) for n in _all_imports(tree)] == [{"accountant.gdp"}, {"accountant.composition"}]


def test_importing_a_submodule_runs_its_packages_first():
    """``from optimizer.search.target import x`` in another package needs ``optimizer.search``'s
    ``__init__`` (Python runs it first); inside the package it does not (it is running already)."""
    (node,) = _all_imports(ast.parse("from optimizer.search.target import Target\n"))
    assert {"optimizer.search", "optimizer.search.target"} <= _targets("optimizer.jobs.provenance", node)
    assert "optimizer.search" not in _targets("optimizer.search.study", node)


def test_no_module_level_import_cycle():
    graph = _graph(lambda tree: _module_level_imports(tree.body))
    cycles = _cycles(graph)
    assert not cycles, "module-level import cycles: " + " | ".join(_describe(graph, c) for c in cycles)


def test_accountant_imports_nothing_above_it():
    """The accountant is the bottom layer: no import of optimizer or scenarios, even in a function."""
    graph = _graph(_all_imports)
    bad = {m: sorted(t for t in ts if not t.startswith("accountant")) for m, ts in graph.items()}
    assert not {m: ts for m, ts in bad.items() if m.startswith("accountant") and ts}


_IMPORT_EACH_ALONE = r"""
import importlib, json, sys, traceback
names, packages = json.loads(sys.argv[1]), tuple(json.loads(sys.argv[2]))
failures = {}
for name in names:
    for loaded in [m for m in sys.modules if m.split(".")[0] in packages]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except BaseException:
        failures[name] = traceback.format_exc(limit=-3)
print(json.dumps(failures))
"""


def test_every_module_imports_alone():
    names = sorted(MODULES)
    proc = subprocess.run(
        [sys.executable, "-c", _IMPORT_EACH_ALONE, json.dumps(names), json.dumps(PACKAGES)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    failures = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not failures, "\n".join(f"import {n} alone failed:\n{tb}" for n, tb in failures.items())


def test_no_import_cycle_at_all():
    """Issue 33 item 5: the whole graph — imports inside functions and under TYPE_CHECKING included —
    has no cycle either (the lazy imports keep modules light; they no longer hide loops)."""
    graph = _graph(_all_imports)
    cycles = _cycles(graph)
    assert not cycles, "import cycles (any level): " + " | ".join(_describe(graph, c) for c in cycles)
