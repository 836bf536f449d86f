"""Issue 32, items 5 and 6: `census-plb pairs` recomputes its reported worst pair(s) fresh (a
resealed, wrong cache entry cannot move it), and failures are fast and clear: Ctrl-C stops a
pool run promptly, an unreachable Dask scheduler fails within seconds naming its address, a huge
CSV field is reported with its file and line, `account` does not claim a cache it has not got,
and a refused allocation file is never quoted."""

from __future__ import annotations

import json
from pathlib import Path

import optimizer.runner as runner
from optimizer.cli import main

ROOT = Path(__file__).resolve().parents[1]
EPS_1E10 = "26.340588852722324353781974500154992685"  # ε_BS(δ_z = 1e-10), ρ = 24811/5000
# fast pairs (long paths); pairs of short paths (e.g. [6, 6]) take tens of seconds
FAST = ["1,1", "1,13", "13,13"]


# ====================================================================== item 5
def _pairs_argv(cache: Path, *extra: str) -> list[str]:
    argv = ["pairs", "--allocation", "dhc-persons", "--eps", EPS_1E10, "--cache", str(cache), "--workers", "1"]
    for p in FAST:
        argv += ["--pair", p]
    return [*argv, "--no-progress", *extra]


def _reseal_pair(cache: Path, pair: list[int], value: str) -> Path:
    """Edit one pair's cached δ to ``value`` and reseal the entry with the project's own checksum
    (a well-formed entry that is simply wrong)."""
    for f in cache.glob("*.json"):
        doc = json.loads(f.read_text(encoding="utf-8"))
        if doc["result"]["pair"] == pair:
            doc["result"]["delta"] = [value]
            doc["result"]["delta_lower"] = [value]
            doc["result"]["delta_upper"] = [value]
            doc["checksum"] = runner._checksum(doc)
            f.write_text(json.dumps(doc), encoding="utf-8")
            return f
    raise AssertionError(f"no cache entry for pair {pair}")


def test_resealed_cache_entry_does_not_move_the_worst_pair(tmp_path, capsys):
    """Issue 32, item 5: a cache value edited and resealed with the project's checksum would make
    a wrong pair the worst; `pairs` recomputes the reported worst pair(s) fresh, warns that the
    cached value disagrees, and reports the true worst pair and value (JSON and text)."""
    cache = tmp_path / "cache"
    assert main(_pairs_argv(cache, "--json")) == 0
    first = json.loads(capsys.readouterr().out)
    true_pair, true_delta = first["worst_pair"], first["worst_delta"]
    assert first["worst_pairs_fresh"] is True and first["cache_disagreements"] == []
    other = next(p for p in ([1, 1], [1, 13], [13, 13]) if p != true_pair)
    entry = _reseal_pair(cache, other, "1e-5")  # far above every true δ at this ε (≈ 1e-12)
    entry_text = entry.read_text(encoding="utf-8")

    assert main(_pairs_argv(cache, "--json")) == 0
    captured = capsys.readouterr()
    again = json.loads(captured.out)
    assert again["worst_pair"] == true_pair and again["worst_delta"] == true_delta
    assert again["grid"][0]["worst_pair"] == true_pair
    assert again["worst_pairs_fresh"] is True
    # the tampered pair was the cached maximum: recomputed without the cache, and so was the
    # true worst pair once it became the candidate (read from the cache in this run)
    assert other in again["worst_pairs_recomputed"] and true_pair in again["worst_pairs_recomputed"]
    (bad,) = again["cache_disagreements"]
    assert bad["pair"] == other and bad["eps"] == EPS_1E10 and bad["cached"] == ["1e-5", "1e-5"]
    err = captured.err
    assert f"[{other[0]}, {other[1]}]" in err and "disagree" in err and "fresh" in err
    assert entry.read_text(encoding="utf-8") == entry_text  # the evidence is left in place

    assert main(_pairs_argv(cache)) == 0  # the text output says so too
    out = capsys.readouterr().out
    lines = out.splitlines()
    row = lines[next(i for i, line in enumerate(lines) if "worst pair" in line) + 1]  # the one ε's row
    assert "-".join(map(str, true_pair)) in row.split()[1]
    assert "recomputed fresh" in out and "warning:" in out and f"[{other[0]}, {other[1]}]" in out
