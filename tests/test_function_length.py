"""Issue 33 item 4: short functions.  No function of the packages is longer than 80 lines, except
the ones listed here (the ones still to split, at their length when the rule came in): a listed
function may only shrink, and one that fits is taken off the list."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 80
#: (file, function): lines, still to split (issue 33); shrink only
TO_SPLIT = {
    ("accountant/tradeoff.py", "tradeoff_at"): 177,
    ("accountant/split.py", "tails_ball"): 175,
    ("accountant/dualprod.py", "values"): 131,
    ("accountant/composition.py", "_epsilon"): 114,
    ("accountant/quadrature.py", "_evaluate_group"): 89,
}


def _lengths() -> dict[tuple[str, str], int]:
    out = {}
    for pkg in ("accountant", "optimizer", "scenarios"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    key = (str(path.relative_to(ROOT)), node.name)
                    out[key] = max(out.get(key, 0), node.end_lineno - node.lineno + 1)
    return out


def test_no_function_is_longer_than_80_lines_except_the_listed_ones_which_only_shrink():
    lengths = _lengths()
    new = {k: n for k, n in lengths.items() if n > MAX_LINES and k not in TO_SPLIT}
    grown = {k: (lengths.get(k, 0), n) for k, n in TO_SPLIT.items() if lengths.get(k, 0) > n}
    fits = sorted(k for k in TO_SPLIT if lengths.get(k, 0) <= MAX_LINES)
    assert not new, f"functions over {MAX_LINES} lines: {new}"
    assert not grown, f"listed functions grew (now, listed): {grown}"
    assert not fits, f"these fit in {MAX_LINES} lines now: take them off TO_SPLIT: {fits}"
