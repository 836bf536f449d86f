"""Issue 33 item 4: short functions.  No function of the packages (sub-packages included) is
longer than 80 lines: a function that long does several things, each of which deserves a name
and a docstring."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 80


def _lengths() -> dict[tuple[str, str], int]:
    out = {}
    for pkg in ("accountant", "optimizer", "scenarios"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    key = (str(path.relative_to(ROOT)), node.name)
                    out[key] = max(out.get(key, 0), node.end_lineno - node.lineno + 1)
    return out


def test_the_length_count_sees_nested_and_sub_package_functions():
    lengths = _lengths()
    assert ("optimizer/pipeline/stages.py", "optimize") in lengths
    assert ("accountant/tradeoff.py", "tradeoff_at") in lengths
    assert len(lengths) > 500


def test_no_function_is_longer_than_80_lines():
    long = {k: n for k, n in _lengths().items() if n > MAX_LINES}
    assert not long, f"functions over {MAX_LINES} lines: {long}"
