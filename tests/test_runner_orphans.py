"""Issue 13, items 7 and 9: pool workers die with their driver (even ``kill -9``); progress on a
non-terminal is plain periodic lines, not one carriage-return line."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def sleepy_job(spec: dict) -> dict:
    """Runner job for the test: record this worker's pid, then sleep."""
    Path(spec["dir"], f"pid-{os.getpid()}").write_text("")
    time.sleep(spec["sleep"])
    return {"ok": True}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purpose
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc to inspect processes")
def test_workers_exit_when_driver_is_killed(tmp_path):
    driver = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from optimizer.jobs.runner import run_jobs
        from tests.test_runner_orphans import sleepy_job
        specs = [{{"dir": {str(tmp_path)!r}, "sleep": 60, "i": i}} for i in range(4)]
        run_jobs(sleepy_job, specs, {str(tmp_path / "cache")!r}, workers=2, progress=False)
    """)
    proc = subprocess.Popen([sys.executable, "-c", driver], cwd=tmp_path)
    try:
        deadline = time.monotonic() + 60
        while len(list(tmp_path.glob("pid-*"))) < 2:
            assert time.monotonic() < deadline, "workers did not start"
            assert proc.poll() is None, "driver exited early"
            time.sleep(0.2)
        pids = [int(p.name[4:]) for p in tmp_path.glob("pid-*")]
        assert all(_alive(p) for p in pids)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 10
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(_alive(p) for p in pids), f"orphaned workers: {pids}"
    finally:
        if proc.poll() is None:
            proc.kill()
        for p in tmp_path.glob("pid-*"):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(p.name[4:]), signal.SIGKILL)


def test_progress_on_non_terminal_is_plain_lines(monkeypatch):
    from optimizer.jobs import runner

    buf = io.StringIO()  # not a TTY
    monkeypatch.setattr(sys, "stderr", buf)
    monkeypatch.setattr(runner, "PLAIN_PROGRESS_SECONDS", 0.0)
    bar = runner._progress(True, 1000, 0, "confirming: pair")
    for _ in range(1000):
        bar.update(1)
    bar.close()
    text = buf.getvalue()
    assert "\r" not in text
    lines = text.splitlines()
    assert lines[0].startswith("confirming: pair: 0/1000") and lines[-1].startswith("confirming: pair: 1000/1000 done")
    assert max(len(x) for x in lines) < 120


def test_json_into_closed_pipe_exits_quietly():
    """Item 9: `census-plb … --json | head -1` exits 0 without a BrokenPipeError traceback."""
    eps = ",".join(str(k) for k in range(1, 401))
    cli = [
        sys.executable,
        "-c",
        "import sys; from optimizer.cli.main import main; sys.exit(main())",
        "account",
        "--sigma2",
        "3",
        "--eps",
        eps,
        "--json",
    ]
    producer = subprocess.Popen(cli, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    first = producer.stdout.readline()
    producer.stdout.close()  # the reader leaves, like `head -1`
    err = producer.stderr.read().decode()
    producer.stderr.close()
    assert producer.wait(timeout=120) == 0, err
    assert first.strip() == b"{"
    assert "BrokenPipe" not in err and "Traceback" not in err, err
