"""Issue 13, items 4 and 5: outputs are written atomically and never through a symlink; a run
writes into its own (git-ignored) folder, the committed reports/ only on purpose (--publish)."""

import errno
import os
from pathlib import Path

import pytest

import optimizer.atomic as atomic
from optimizer.atomic import UnsafeOutputError, atomic_write_bytes, atomic_write_json, atomic_write_text
from optimizer.cli.main import main
from optimizer.pipeline.accounting import compute_accounting
from optimizer.report import build_report, default_comparison_dir, default_report_dir, write_comparison
from optimizer.scenario import load_scenario
from tests.toy_scenario import TOY_ALLOC as ALLOC
from tests.toy_scenario import TOY_SCENARIO

ROOT = Path(__file__).resolve().parents[1]

SCENARIO = TOY_SCENARIO


@pytest.fixture
def toy(tmp_path):
    (tmp_path / "alloc.toml").write_text(ALLOC)
    (tmp_path / "toy.toml").write_text(SCENARIO)
    return tmp_path


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


# ====================================================================== item 4: atomic writes
def test_atomic_write_refuses_a_symlinked_destination(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.md").symlink_to(victim)
    for write in (
        lambda p: atomic_write_text(p, "clobber"),
        lambda p: atomic_write_bytes(p, b"clobber"),
        lambda p: atomic_write_json(p, {"x": 1}),
    ):
        with pytest.raises(UnsafeOutputError) as err:
            write(out / "report.md")
        msg = str(err.value)
        assert str(out / "report.md") in msg and "symbolic link" in msg and "\n" not in msg
        assert victim.read_text() == "precious\n"
        assert (out / "report.md").is_symlink() and _leftovers(out) == []


def test_atomic_write_bytes_exact_and_no_temp_left(tmp_path):
    data = bytes(range(256)) * 3 + b"\r\n\x00end"
    atomic_write_bytes(tmp_path / "sub" / "fig.png", data)
    assert (tmp_path / "sub" / "fig.png").read_bytes() == data
    assert _leftovers(tmp_path / "sub") == []


class _DiskFull:
    """A file object that writes the first half of the data, then fails like a full disk."""

    def __init__(self, fh):
        self.fh = fh

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.fh.close()
        return False

    def write(self, data):
        self.fh.write(data[: len(data) // 2])
        self.fh.flush()
        raise OSError(errno.ENOSPC, "No space left on device")

    def __getattr__(self, name):
        return getattr(self.fh, name)


def test_failed_write_keeps_the_old_file_and_leaves_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "report.html"
    target.write_text("old complete report\n")
    real_fdopen = os.fdopen
    monkeypatch.setattr(atomic.os, "fdopen", lambda *a, **k: _DiskFull(real_fdopen(*a, **k)))
    with pytest.raises(OSError, match="No space left"):
        atomic_write_text(target, "x" * 225_000)
    with pytest.raises(OSError, match="No space left"):
        atomic_write_bytes(target, b"y" * 225_000)
    assert target.read_text() == "old complete report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


def test_failed_fsync_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "optimize.json"
    atomic_write_json(target, {"run": 1})
    before = target.read_bytes()

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", full)
    with pytest.raises(OSError):
        atomic_write_json(target, {"run": 2, "big": "z" * 10_000})
    assert target.read_bytes() == before and _leftovers(tmp_path) == []


def test_report_never_writes_through_a_symlink(toy, capsys):
    victim = toy / "victim.txt"
    victim.write_text("do not touch\n")
    out = toy / "out"
    out.mkdir()
    (out / "report.md").symlink_to(victim)
    rc = main(
        [
            "report",
            "--scenario",
            str(toy / "toy.toml"),
            "--run-dir",
            str(toy / "none"),
            "--out",
            str(out),
            "--skip-optimize",
            "--quiet",
        ]
    )
    err = capsys.readouterr().err.strip()
    assert rc == 2 and victim.read_text() == "do not touch\n"
    assert len(err.splitlines()) == 1 and str(out / "report.md") in err and "symbolic link" in err
    assert not (out / "report.html").exists()  # refused before anything was written


def test_report_failed_write_keeps_the_previous_report(toy, monkeypatch):
    sc = load_scenario(toy / "toy.toml")
    out = toy / "out"
    acc = compute_accounting(sc)
    build_report(sc, toy / "none", out, accounting=acc)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    real_replace = os.replace

    def fail_on_html(src, dst, *a, **k):
        if str(dst).endswith("report.html"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_replace(src, dst, *a, **k)

    monkeypatch.setattr(atomic.os, "replace", fail_on_html)
    with pytest.raises(OSError):
        build_report(sc, toy / "none", out, accounting=acc)
    assert (out / "report.html").read_bytes() == before["report.html"]
    assert sorted(p.name for p in out.iterdir()) == sorted(before)  # no temp files left behind


def test_comparison_refuses_symlinks(toy):
    victim = toy / "victim.md"
    victim.write_text("keep\n")
    out = toy / "cmp"
    out.mkdir()
    (out / "scenario_comparison.md").symlink_to(victim)
    with pytest.raises(UnsafeOutputError):
        write_comparison([], out)
    assert victim.read_text() == "keep\n"


# ====================================================================== item 5: tracked files
def test_default_output_paths_are_not_the_committed_reports():
    for name in ("dhc-persons", "pl94-units"):
        d = default_report_dir(name)
        assert d.parts[0] == "runs" and "reports" not in d.parts[:1] and name in d.parts
        assert default_report_dir(name, publish=True) == Path("reports") / name
    assert default_comparison_dir().parts[0] == "runs"
    assert default_comparison_dir(publish=True) == Path("reports")
    ignored = [ln.strip() for ln in (ROOT / ".gitignore").read_text().splitlines()]
    assert "runs/" in ignored  # the default output folder is git-ignored


def test_report_default_writes_under_runs(toy, monkeypatch, capsys):
    monkeypatch.chdir(toy)
    assert main(["report", "--scenario", "toy.toml", "--skip-optimize", "--quiet"]) == 0
    printed = Path(capsys.readouterr().out.strip())
    assert printed == default_report_dir("toy") / "report.html" and (toy / printed).is_file()
    assert not (toy / "reports").exists()


def test_report_publish_writes_reports_and_conflicts_with_out(toy, monkeypatch, capsys):
    monkeypatch.chdir(toy)
    assert main(["report", "--scenario", "toy.toml", "--skip-optimize", "--quiet", "--publish"]) == 0
    assert (toy / "reports" / "toy" / "report.html").is_file()
    capsys.readouterr()
    assert (
        main(["report", "--scenario", "toy.toml", "--skip-optimize", "--quiet", "--publish", "--out", "elsewhere"]) == 2
    )
    assert "--publish" in capsys.readouterr().err and not (toy / "elsewhere").exists()


def test_compare_without_local_runs_leaves_reports_alone(toy, monkeypatch, capsys):
    monkeypatch.chdir(toy)
    committed = toy / "reports" / "scenario_comparison.md"
    committed.parent.mkdir()
    committed.write_text("committed comparison\n")
    assert main(["scenario", "compare", "toy.toml", "--quiet"]) == 0
    assert committed.read_text() == "committed comparison\n"
    assert sorted(p.name for p in (toy / "reports").iterdir()) == ["scenario_comparison.md"]
    written = toy / default_comparison_dir() / "scenario_comparison.md"
    assert "| toy |" in written.read_text(encoding="utf-8")
    assert "| toy |" in capsys.readouterr().out
    # on purpose: --publish regenerates the committed table
    assert main(["scenario", "compare", "toy.toml", "--quiet", "--publish"]) == 0
    assert "| toy |" in committed.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "cmd,link",
    [
        (["pairs", "--allocation", "pl94-units", "--pair", "1,1", "--eps", "1", "--no-progress"], "pl94-units.json"),
        (["optimize", "--allocation", "pl94-units", "--trials", "1", "--no-confirm"], "optimize.json"),
    ],
)
def test_pairs_and_optimize_refuse_a_symlinked_output_before_any_work(tmp_path, capsys, cmd, link):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / link).symlink_to(victim)
    rc = main([*cmd, "--out", str(out), *(["--cache", str(tmp_path / "cache")] if cmd[0] == "pairs" else [])])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and str(out / link) in err and "symbolic link" in err and len(err.splitlines()) == 1
    assert victim.read_text() == "keep me\n"
    assert not (tmp_path / "cache").exists() and not (out / "optuna.journal").exists()  # nothing ran
