"""Issue 13, item 10: every input is validated before any work starts, and every error is one
line naming the value and where it came from (file, line, field / option)."""

import json
import re
import time
from fractions import Fraction

import pytest

from accountant.composition import SIGMA2_MAX, SIGMA2_MIN
from optimizer.census.allocation import Allocation, AllocationError
from optimizer.cli.main import main
from optimizer.pipeline.accounting import compute_accounting
from optimizer.report import read_run, render_markdown
from optimizer.scenario import TARGET_DELTA_MIN, ScenarioError, parse_scenario

HEADER = "geolevel,query,rho_exact\n"
SCENARIO = """name = "x"
description = "test"
allocation = "dhc-persons"
conversion = "bun-steinke"
target_delta = "{delta}"
trials = 1
seed = 0
{extra}
"""


def _one_line_error(capsys, argv) -> str:
    """Run the CLI, expect exit 2 and one stderr line; return it."""
    rc = main(argv)
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert rc == 2, (rc, err)
    assert len(err.splitlines()) == 1, err
    return err


# ====================================================================== allocation files
def test_non_utf8_allocation_names_file_and_line(tmp_path, capsys):
    p = tmp_path / "latin1.csv"
    p.write_bytes(HEADER.encode() + b"US,total,1/10\nUS,r\xe9sum\xe9,1/10\n")
    with pytest.raises(AllocationError) as err:
        Allocation.from_csv(p)
    msg = str(err.value)
    assert str(p) in msg and "line 3" in msg and "UTF-8" in msg
    err_line = _one_line_error(
        capsys, ["pairs", "--allocation", str(p), "--eps", "1", "--cache", str(tmp_path / "cache")]
    )
    assert str(p) in err_line and "line 3" in err_line
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize("rho", ["1e400", "1e-400", "2e4", "1/10000000000000"])
def test_rho_outside_the_accountants_range_is_refused_up_front(tmp_path, rho):
    p = tmp_path / "a.csv"
    p.write_text(HEADER + f"US,total,1/10\nUS,age,{rho}\n")
    with pytest.raises(AllocationError) as err:
        Allocation.from_csv(p)
    msg = str(err.value)
    assert str(p) in msg and "line 3" in msg and "rho_exact" in msg and rho in msg
    # the supported range is the accountant's: sigma^2 = 1/rho in [SIGMA2_MIN, SIGMA2_MAX]
    assert str(1 / SIGMA2_MAX) in msg and str(1 / SIGMA2_MIN) in msg


def test_rho_at_the_range_ends_is_accepted(tmp_path):
    p = tmp_path / "a.csv"
    p.write_text(HEADER + f"US,total,{1 / SIGMA2_MAX}\nUS,age,{1 / SIGMA2_MIN}\n")
    a = Allocation.from_csv(p)
    assert a.total_rho == 1 / SIGMA2_MAX + 1 / SIGMA2_MIN


def test_toml_rho_out_of_range_names_line_and_field(tmp_path):
    p = tmp_path / "a.toml"
    p.write_text('run_type = "custom"\n[[geolevel]]\nname = "US"\n[geolevel.queries]\ntotal = "1/10"\nage = "1e-400"\n')
    with pytest.raises(AllocationError) as err:
        Allocation.from_toml(p)
    msg = str(err.value)
    assert str(p) in msg and "line 6" in msg and "age" in msg and "1e-400" in msg


def test_duplicate_geolevel_tables_are_refused(tmp_path):
    p = tmp_path / "dup.toml"
    p.write_text(
        'run_type = "custom"\n[[geolevel]]\nname = "US"\nqueries = { total = "1/10" }\n'
        '[[geolevel]]\nname = "US"\nqueries = { age = "1/10" }\n'
    )
    with pytest.raises(AllocationError) as err:
        Allocation.from_toml(p)
    msg = str(err.value)
    assert str(p) in msg and "line 5" in msg and "'US'" in msg and "line 2" in msg and "duplicate" in msg


def test_arbitrary_file_is_not_echoed(tmp_path, capsys):
    secret = "<b>root</b>:x:0:0:" + "S3CRET" * 40 + "<script>alert(1)</script>"
    p = tmp_path / "passwd.csv"
    p.write_text(secret + "\nline two\n")
    with pytest.raises(AllocationError) as err:
        Allocation.from_csv(p)
    msg = str(err.value)
    assert "not an allocation CSV" in msg and "geolevel,query,rho_exact" in msg
    assert secret[:60] not in msg and "<b>" not in msg and "<script>" not in msg  # short and escaped
    assert "root" in msg and len(msg) < 300 + len(str(p))
    # a scenario pointing at such a file: same one-line error naming it
    sc = tmp_path / "s.toml"
    sc.write_text(SCENARIO.format(delta="1e-10", extra="").replace('"dhc-persons"', f'"{p}"'))
    err_line = _one_line_error(
        capsys, ["report", "--scenario", str(sc), "--skip-optimize", "--quiet", "--out", str(tmp_path / "out")]
    )
    assert "not an allocation CSV" in err_line and secret[:60] not in err_line
    assert not (tmp_path / "out").exists()


def test_binary_file_is_not_an_allocation(tmp_path):
    p = tmp_path / "blob.csv"
    p.write_bytes(bytes(range(256)))
    with pytest.raises(AllocationError) as err:
        Allocation.from_csv(p)
    assert str(p) in str(err.value) and "UTF-8" in str(err.value)


# ====================================================================== pairs options
@pytest.mark.parametrize(
    "argv,names",
    [
        (["--eps", "nan"], ("--eps", "nan")),
        (["--eps", "inf"], ("--eps", "inf")),
        (["--eps=-1"], ("--eps", "-1")),
        (["--eps", "1e400"], ("--eps", "1e400")),
        (["--eps", "1,abc"], ("--eps", "abc")),
        (["--eps", "1", "--tol", "0"], ("--tol", "0")),
        (["--eps", "1", "--tol", "nan"], ("--tol", "nan")),
        (["--eps", "1", "--tradeoff", "--tradeoff-points", "0"], ("--tradeoff-points", "0")),
        (["--eps", "1", "--tradeoff", "--tradeoff-points", "1"], ("--tradeoff-points", "1")),
        (["--deltas", "abc"], ("--deltas", "abc")),
        (["--deltas", "0"], ("--deltas", "0")),
        (["--deltas", "1.5"], ("--deltas", "1.5")),
        (["--eps", "1", "--workers", "0"], ("--workers", "0")),
    ],
)
def test_pairs_refuses_bad_options_before_any_job(tmp_path, capsys, argv, names):
    cache = tmp_path / "cache"
    t0 = time.perf_counter()
    err = _one_line_error(
        capsys, ["pairs", "--allocation", "pl94-units", "--pair", "1,1", "--no-progress", "--cache", str(cache), *argv]
    )
    assert time.perf_counter() - t0 < 10
    for n in names:
        assert n in err, err
    assert len(err) < 300 and "JobError" not in err
    assert not cache.exists()  # no job was started


# ====================================================================== optimize options
def test_optimize_trials_0_on_a_new_study_is_refused(tmp_path, capsys):
    out = tmp_path / "run"
    err = _one_line_error(
        capsys, ["optimize", "--allocation", "pl94-units", "--trials", "0", "--no-confirm", "--out", str(out)]
    )
    assert "--trials 0" in err and "no existing study" in err
    assert not (out / "optuna.journal").exists() and "uniform cut on the proxy pair" not in err


def test_optimize_workers_0_is_refused_before_the_trials(tmp_path, capsys):
    out = tmp_path / "run"
    t0 = time.perf_counter()
    err = _one_line_error(
        capsys, ["optimize", "--allocation", "pl94-units", "--trials", "1", "--workers", "0", "--out", str(out)]
    )
    assert time.perf_counter() - t0 < 10
    assert "--workers" in err and "0" in err
    assert not (out / "optuna.journal").exists()


def test_truncated_optimize_json_names_the_file(tmp_path, capsys):
    run = tmp_path / "runs" / "x"
    run.mkdir(parents=True)
    (run / "optimize.json").write_text(json.dumps({"scenario": "x", "confirmed": True})[:17])
    with pytest.raises(ValueError) as err:
        read_run(run)
    assert str(run / "optimize.json") in str(err.value) and "\n" not in str(err.value)


# ====================================================================== scenario values
@pytest.mark.parametrize("delta", ["1e-300", "1e-400", "1e-5000"])
def test_target_delta_below_the_supported_range(delta):
    with pytest.raises(ScenarioError) as err:
        parse_scenario(SCENARIO.format(delta=delta, extra=""), "s.toml")
    msg = str(err.value)
    assert "s.toml" in msg and "line 5" in msg and "target_delta" in msg and delta in msg
    assert str(TARGET_DELTA_MIN) in msg or f"{float(TARGET_DELTA_MIN):g}" in msg


def test_target_delta_in_range_is_accepted():
    s = parse_scenario(SCENARIO.format(delta="1e-100", extra=""), "s.toml")
    assert s.target_delta == Fraction(1, 10**100) and s.target_delta >= TARGET_DELTA_MIN


def test_tiny_weight_is_parsed_exactly_and_the_message_is_right():
    with pytest.raises(ScenarioError) as err:
        parse_scenario(SCENARIO.format(delta="1e-10", extra='[weights]\ngeolevel = { Block = "1e-400" }'), "s.toml")
    msg = str(err.value)
    assert "s.toml" in msg and "line 9" in msg and "weights.geolevel.Block" in msg and "'1e-400'" in msg
    assert "is > 0" in msg and "must be > 0" not in msg and "1e-100" in msg
    # the optimizer's own check (library use, no scenario file): exact Fraction > 0, correct reason
    from optimizer.census.allocation import load_builtin
    from optimizer.search.variance import _weights

    alloc = load_builtin("pl94-units")
    weights = {(g, q): Fraction(1) for g, q, _ in alloc.items()}
    weights[next(iter(weights))] = Fraction(1, 10**400)
    with pytest.raises(ValueError) as err:
        _weights(alloc, weights)
    msg = str(err.value)
    assert "must be > 0" not in msg and "double precision" in msg and "0.0" in msg
    assert len(msg) < 300  # the 401-digit denominator is not printed in full


def test_scenario_weight_out_of_range_is_refused_at_load(tmp_path, capsys):
    sc = tmp_path / "s.toml"
    sc.write_text(SCENARIO.format(delta="1e-10", extra='[weights]\ngeolevel = { Block = "1e-400" }'))
    err = _one_line_error(
        capsys, ["optimize", "--scenario", str(sc), "--trials", "1", "--no-confirm", "--out", str(tmp_path / "run")]
    )
    assert "weights.geolevel.Block" in err and "1e-400" in err and "must be > 0" not in err
    assert not (tmp_path / "run" / "optuna.journal").exists()


# ====================================================================== report.md escaping
def test_report_markdown_escapes_names():
    secs = [
        {
            "id": "where",
            "title": "Where <b>",
            "paras": ["query [x](javascript:alert(1)) <script>alert(2)</script>"],
            "table": (["query"], [["<script>alert(3)</script>"], ["[click](javascript:alert(4))"], ["a|b"]]),
        }
    ]
    md = render_markdown("t <img src=x onerror=alert(5)>", secs, {})
    assert re.search(r"(?<!\\)[<>\[\]&]", md) is None  # every HTML/link metacharacter is escaped
    assert re.search(r"(?<!\\)\]\(javascript:", md) is None  # no live link: every "](" is escaped
    # the text itself is still there, escaped
    assert "\\<script\\>alert(3)\\</script\\>" in md and "\\[click\\](javascript:alert(4))" in md
    assert "a\\|b" in md


def test_built_report_md_escapes_query_names(tmp_path):
    from optimizer.report import build_report
    from optimizer.scenario import load_scenario

    (tmp_path / "alloc.toml").write_text(
        'run_type = "custom"\n[[geolevel]]\nname = "US"\n[geolevel.queries]\n"<script>alert(1)</script>" = "1/10"\n'
        '"[x](javascript:alert(2))" = "1/5"\n'
    )
    (tmp_path / "s.toml").write_text(SCENARIO.format(delta="1e-10", extra="").replace('"dhc-persons"', '"alloc.toml"'))
    out = tmp_path / "out"
    sc = load_scenario(tmp_path / "s.toml")
    build_report(sc, tmp_path / "none", out, accounting=compute_accounting(sc))
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "\\<script\\>alert(1)\\</script\\>" in md and "\\[x\\](javascript:alert(2))" in md
    assert "<script>" not in md and re.search(r"(?<!\\)\]\(javascript:", md) is None
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(1)" in html and "<script>alert" not in html


def test_non_utf8_scenario_names_file_and_line(tmp_path):
    from optimizer.scenario import load_scenario

    p = tmp_path / "s.toml"
    p.write_bytes(SCENARIO.format(delta="1e-10", extra="").replace('"test"', '"caf\xe9"').encode("latin-1"))
    with pytest.raises(ScenarioError) as err:
        load_scenario(p)
    msg = str(err.value)
    assert "s.toml" in msg and "line 2" in msg and "UTF-8" in msg
