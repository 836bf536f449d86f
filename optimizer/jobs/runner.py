"""Run many independent accounting jobs: in parallel, cached, resumable.

A *job* is a module-level (picklable) function applied to a frozen *spec* (a frozen dataclass
or a tree of plain values; exact ``Fraction`` budgets allowed).  Its id is the SHA-256 of a
canonical JSON form of ``{"fn": "<module>.<qualname>", "spec": <spec>}`` (exact fractions written
as ``"p/q"`` strings, dict keys sorted), so the same question always maps to the same id, and a
different function never reuses another's results.  Each finished job is stored as
``<cache_dir>/<id>.json`` (spec, result, timing), written atomically (temp file in the same
directory, flushed and fsync'ed, then :func:`os.replace`): a run that is killed resumes without
recomputing finished jobs and never leaves a half-written result.

Execution: serial with ``workers=1``; otherwise a local
:class:`concurrent.futures.ProcessPoolExecutor` (``spawn`` start method; ``workers=None`` means
all cores); or a Dask ``distributed`` cluster when ``scheduler`` is given (an address such as
``"tcp://host:8786"`` or an existing ``distributed.Client``; optional extra
``pip install 'census-plb[distributed]'``).  Results are written by the driver, so remote
workers need no shared file system.  Dask workers must be single-threaded (``dask worker …
--nthreads 1``; Dask's default is one thread per core): the accountant's working precision
(flint ``ctx.prec``, mpmath ``mp.prec``) is process-global, so a cluster with a multi-threaded
worker is refused with a ValueError naming it (:func:`check_dask_workers`).

Job functions must return JSON-representable values: ``None``, ``bool``, ``int``, ``float``,
``str``, ``Fraction``, lists/tuples and dicts with string keys (tuples come back as lists;
results are returned in the same decoded form whether freshly computed or read from cache).
Convert ``mpmath`` numbers or :class:`accountant.Certified` values to strings in the job.

Scaling many exact-accounting jobs (arXiv 2606.29835 runs 946 pair jobs per curve) is the
reason this module exists.

>>> spec = {"pair": [13, 13], "rho": Fraction(24811, 5000)}
>>> canonical_json(spec)
'{"pair":[13,13],"rho":{"__fraction__":"24811/5000"}}'
>>> len(job_id(spec))
64
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import enum
import hashlib
import json
import math
import multiprocessing
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

from optimizer.atomic import atomic_write_json
from optimizer.jobs.provenance import file_code_version

__all__ = ["JobError", "SchedulerUnreachableError", "canonical_json", "check_dask_workers", "job_id", "run_jobs"]

_FORMAT = 2  # cache file format version (stored in every file; 2: code version, result format, checksum)


def _job_code_version(fn: Callable) -> str:
    """The code version a job's cached result is valid for: the accountant / optimizer sources
    (:func:`optimizer.jobs.provenance.code_version`) plus the job function's own module file."""
    return file_code_version(getattr(sys.modules.get(fn.__module__), "__file__", None))


def _result_format(fn: Callable) -> int:
    """A job function's result format (its ``result_format`` attribute; bump it when the
    returned fields change, so older cached results are recomputed)."""
    return int(getattr(fn, "result_format", 1))


def _checksum(payload: dict) -> str:
    """sha256 of a cache payload's canonical JSON (without its ``checksum`` field)."""
    body = {k: v for k, v in payload.items() if k != "checksum"}
    return hashlib.sha256(
        json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    ).hexdigest()


class JobError(RuntimeError):
    """A job failed; ``job_id`` and ``spec`` identify it, ``__cause__`` is the original error."""

    def __init__(self, job_id: str, spec: Any, message: str):
        self.job_id, self.spec = job_id, spec
        text = repr(spec)
        if len(text) > 200:
            text = text[:197] + "..."
        super().__init__(f"job {job_id} (spec {text}) failed: {message}")


# ====================================================================== canonical form / ids
def _canon(obj: Any, where: str) -> Any:
    """A JSON-ready canonical form of a spec (raises ValueError naming the location)."""
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, int):
        return obj
    if isinstance(obj, float):
        if not math.isfinite(obj):
            raise ValueError(f"spec: non-finite float {obj!r} at {where}")
        return obj
    if isinstance(obj, Fraction):
        return {"__fraction__": f"{obj.numerator}/{obj.denominator}"}
    if isinstance(obj, Decimal):
        return {"__decimal__": str(obj)}
    if isinstance(obj, enum.Enum):
        return {"__enum__": f"{type(obj).__module__}.{type(obj).__qualname__}", "value": _canon(obj.value, where)}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        params = getattr(type(obj), "__dataclass_params__", None)
        if params is None or not params.frozen:
            raise ValueError(f"spec: dataclass {type(obj).__qualname__} at {where} must be frozen")
        out = {"__dataclass__": f"{type(obj).__module__}.{type(obj).__qualname__}"}
        for f in dataclasses.fields(obj):
            out[f.name] = _canon(getattr(obj, f.name), f"{where}.{f.name}")
        return out
    if isinstance(obj, (list, tuple)):
        return [_canon(v, f"{where}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, (set, frozenset)):
        items = [_canon(v, f"{where}{{}}") for v in obj]
        return {"__set__": sorted(items, key=lambda v: json.dumps(v, sort_keys=True))}
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if not isinstance(k, str):
                raise ValueError(f"spec: dict key {k!r} at {where} must be a string")
            out[k] = _canon(v, f"{where}[{k!r}]")
        return out
    raise ValueError(
        f"spec: cannot canonicalise {type(obj).__name__} {obj!r} at {where}; use frozen dataclasses, "
        "Fractions, numbers, strings, tuples and dicts"
    )


def canonical_json(spec: Any) -> str:
    """Canonical JSON text of a spec: sorted keys, no spaces, exact fractions as strings."""
    return json.dumps(_canon(spec, "spec"), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _fn_name(fn: Callable) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


def job_id(spec: Any, fn: Callable | None = None) -> str:
    """SHA-256 hex id of a job: of ``{"fn": name, "spec": spec}`` when ``fn`` is given."""
    canon = _canon(spec, "spec")
    payload = canon if fn is None else {"fn": _fn_name(fn), "spec": canon}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _check_fn(fn: Callable) -> None:
    if not callable(fn):
        raise ValueError(f"run_jobs: fn must be callable, got {type(fn).__name__} {fn!r}")
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    if not module or not qualname or "<" in qualname:
        raise ValueError(f"run_jobs: fn {fn!r} must be a module-level function (picklable), not a lambda or closure")
    target: Any = sys.modules.get(module)
    for part in qualname.split("."):
        target = getattr(target, part, None)
    if target is not fn:
        raise ValueError(f"run_jobs: fn {module}.{qualname} cannot be found by name in its module (not picklable)")


# ====================================================================== result encoding
def _encode(obj: Any, where: str) -> Any:
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if isinstance(obj, float):
        if not math.isfinite(obj):
            return {"__float__": repr(obj)}
        return obj
    if isinstance(obj, Fraction):
        return {"__fraction__": f"{obj.numerator}/{obj.denominator}"}
    if isinstance(obj, (list, tuple)):
        if all(type(v) is str for v in obj):  # fast path: the long lists of decimal strings
            return list(obj)
        return [_encode(v, f"{where}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if not isinstance(k, str) or (k.startswith("__") and k.endswith("__")):
                raise ValueError(f"dict key {k!r} at {where} must be a string, not a dunder name")
            out[k] = _encode(v, f"{where}[{k!r}]")
        return out
    raise ValueError(f"{type(obj).__name__} {obj!r} at {where} is not JSON-representable; return strings instead")


def _decode(obj: Any) -> Any:
    if isinstance(obj, list):
        if all(type(v) is str for v in obj):
            return obj
        return [_decode(v) for v in obj]
    if isinstance(obj, dict):
        if set(obj) == {"__fraction__"}:
            return Fraction(obj["__fraction__"])
        if set(obj) == {"__float__"}:
            return float(obj["__float__"])
        return {k: _decode(v) for k, v in obj.items()}
    return obj


def _decode_object(obj: dict) -> Any:
    """``json.loads`` object hook: the tagged values of :func:`_encode` (nested dicts are
    decoded first by json itself)."""
    if len(obj) == 1:
        if "__fraction__" in obj:
            return Fraction(obj["__fraction__"])
        if "__float__" in obj:
            return float(obj["__float__"])
    return obj


def _read_cached(path: Path, jid: str, fn_name: str, code: str = "", rformat: int = 1) -> tuple[str, Any]:
    """``("hit", result)`` or ``(why not, None)``: "missing", "unreadable", "stale" (other format,
    code version or result format: recomputed) or "edited" (checksum mismatch: recomputed)."""
    if not path.is_file():
        return "missing", None
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
        if (
            not isinstance(payload, dict)
            or payload.get("job_id") != jid
            or payload.get("fn") != fn_name
            or "result" not in payload
        ):
            raise ValueError("id, function or result field does not match")
    except (ValueError, OSError) as exc:
        warnings.warn(
            f"run_jobs: ignoring unreadable cache file {path} ({exc}); the job will be recomputed", stacklevel=3
        )
        return "unreadable", None
    if (
        payload.get("format") != _FORMAT
        or payload.get("code_version") != code
        or payload.get("result_format") != rformat
    ):
        return "stale", None
    if payload.get("checksum") != _checksum(payload):
        warnings.warn(
            f"run_jobs: cache file {path} was changed after it was written (checksum mismatch); "
            "the job will be recomputed",
            stacklevel=3,
        )
        return "edited", None
    return "hit", _decode(payload["result"])


# ====================================================================== progress
class _Counter:
    """Minimal stderr progress counter (used when tqdm is not installed)."""

    def __init__(self, total: int, initial: int, desc: str):
        self.total, self.n, self.desc = total, initial, desc
        self._show()

    def _show(self):
        sys.stderr.write(f"\r{self.desc}: {self.n}/{self.total} jobs")
        sys.stderr.flush()

    def update(self, k: int = 1):
        self.n += k
        self._show()

    def close(self):
        sys.stderr.write("\n")
        sys.stderr.flush()


class _NoProgress:
    def update(self, k: int = 1):
        pass

    def close(self):
        pass


class _PlainLines:
    """Progress for logs (stderr not a terminal): one plain line at most every
    ``PLAIN_PROGRESS_SECONDS`` seconds, and a final line — never carriage returns."""

    def __init__(self, total: int, initial: int, desc: str, stream=None):
        self.total, self.n, self.desc = total, initial, desc
        self.stream = stream or sys.stderr
        self.t0 = self.last = time.monotonic()
        self._line(f"{initial}/{total} done at start")

    def _line(self, what: str) -> None:
        self.stream.write(f"{self.desc}: {what}\n")
        self.stream.flush()

    def update(self, k: int = 1):
        self.n += k
        now = time.monotonic()
        if now - self.last >= PLAIN_PROGRESS_SECONDS and self.n < self.total:
            self.last = now
            self._line(f"{self.n}/{self.total} ({100 * self.n / max(self.total, 1):.0f} %, {now - self.t0:.0f} s)")

    def close(self):
        self._line(f"{self.n}/{self.total} done in {time.monotonic() - self.t0:.1f} s")


#: seconds between progress lines when stderr is not a terminal.
PLAIN_PROGRESS_SECONDS = 10.0


def _progress(enabled: bool, total: int, initial: int, desc: str):
    if not enabled:
        return _NoProgress()
    isatty = getattr(sys.stderr, "isatty", None)
    if not (isatty and isatty()):
        return _PlainLines(total, initial, desc)
    try:
        from tqdm.auto import tqdm  # noqa: PLC0415 - optional (the test extra): a progress bar only when installed
    except ImportError:
        return _Counter(total, initial, desc)
    return tqdm(total=total, initial=initial, desc=desc, unit="job", file=sys.stderr)


# ====================================================================== execution
def _timed_call(fn: Callable, spec: Any) -> tuple[Any, float]:
    """Worker-side wrapper: the job's result and its wall time in seconds."""
    t0 = time.perf_counter()
    result = fn(spec)
    return result, time.perf_counter() - t0


def _job_ids(spec_list: list[Any], fn) -> list[str]:
    """The job id of each spec (a spec that cannot be canonicalised is named by its position)."""
    ids = []
    for i, spec in enumerate(spec_list):
        try:
            ids.append(job_id(spec, fn))
        except ValueError as exc:
            raise ValueError(f"run_jobs: spec #{i}: {exc}") from None
    return ids


def _cached_results(cache: Path, unique: dict[str, Any], name: str, code: str, rformat) -> dict[str, Any]:
    """The results already in ``cache`` for these jobs (made by this code, in this format); a warning
    counts the stale ones, which are recomputed."""
    results: dict[str, Any] = {}
    stale = 0
    for jid in unique:
        status, value = _read_cached(cache / f"{jid}.json", jid, name, code, rformat)
        if status == "hit":
            results[jid] = value
        stale += status == "stale"
    if stale:
        warnings.warn(
            f"run_jobs: {stale} cached result(s) in {cache} were computed by other code or in an older "
            f"result format; recomputing them",
            stacklevel=3,
        )
    return results


def _store(cache: Path, jid: str, spec: Any, outcome: tuple[Any, float], version: tuple[str, str, Any]) -> Any:
    """Write one job's result to the cache (atomically, checksummed) and return it decoded as a reader
    of the cache would see it; ``version`` = (function name, code version, result format)."""
    result, elapsed = outcome
    name, code, rformat = version
    try:
        encoded = _encode(result, "result")
    except ValueError as exc:
        raise JobError(jid, spec, f"returned a value that cannot be cached: {exc}") from None
    payload = {
        "format": _FORMAT,
        "job_id": jid,
        "fn": name,
        "spec": _canon(spec, "spec"),
        "result": encoded,
        "elapsed_seconds": elapsed,
        "code_version": code,
        "result_format": rformat,
    }
    payload["checksum"] = _checksum(payload)
    atomic_write_json(cache / f"{jid}.json", payload)
    return _decode(encoded)


def run_jobs(
    fn: Callable[[Any], Any],
    specs: Iterable[Any],
    cache_dir: str | os.PathLike,
    workers: int | None = None,
    scheduler: Any = None,
    progress: bool = True,
    label: str | None = None,
    computed: set[int] | None = None,
) -> list[Any]:
    """Run ``fn(spec)`` for every spec, skipping jobs already cached in ``cache_dir``.

    Args:
        fn: a module-level function of one frozen spec returning a JSON-representable value.
        specs: the job specs; duplicates (same id) are computed once.
        cache_dir: directory of per-job result files (created if missing).
        workers: ``1`` = serial in this process; ``None`` = all local cores; ``n`` = n processes.
            Ignored when ``scheduler`` is given.
        scheduler: Dask ``distributed`` scheduler address or ``Client`` (optional extra);
            every worker must run one thread (:func:`check_dask_workers`).
        progress: show progress on stderr: a bar on a terminal (tqdm if installed, else a
            counter), plain periodic lines otherwise (logs, CI).
        label: what the jobs are, for people (``"confirming the uniform rescale: pair"``);
            default the job function's name.
        computed: if given, the positions in ``specs`` whose result was computed by this call
            (not read from the cache) are added to it; a caller that must not trust stored
            numbers recomputes only the others.

    Returns:
        The results, aligned with ``specs`` (decoded from JSON: tuples become lists,
        Fractions stay exact).

    Raises:
        ValueError: bad ``fn``, ``workers`` or a spec that cannot be canonicalised, or a Dask
            cluster with a multi-threaded worker (before any job runs).
        JobError: a job raised or returned a non-JSON value; the message names the job id.
            Jobs finished before the failure stay cached, so a rerun resumes.
    """
    _check_fn(fn)
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"run_jobs: workers must be None or an int >= 1, got {workers!r}")
    spec_list = list(specs)
    name = _fn_name(fn)
    ids = _job_ids(spec_list, fn)
    cache = Path(cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    unique: dict[str, Any] = {}
    for jid, spec in zip(ids, spec_list):
        unique.setdefault(jid, spec)
    code, rformat = _job_code_version(fn), _result_format(fn)
    results = _cached_results(cache, unique, name, code, rformat)
    pending = [jid for jid in unique if jid not in results]

    bar = _progress(progress, len(unique), len(results), label or fn.__qualname__)

    def finish(jid: str, outcome: tuple[Any, float]) -> None:
        results[jid] = _store(cache, jid, unique[jid], outcome, (name, code, rformat))
        bar.update(1)

    try:
        if pending:
            if scheduler is not None:
                _run_dask(fn, unique, pending, scheduler, finish)
            elif workers == 1:
                for jid in pending:
                    try:
                        outcome = _timed_call(fn, unique[jid])
                    except Exception as exc:
                        raise JobError(jid, unique[jid], f"{type(exc).__name__}: {exc}") from exc
                    finish(jid, outcome)
            else:
                n = min(workers or os.cpu_count() or 1, len(pending))
                _run_pool(fn, unique, pending, n, finish)
    finally:
        bar.close()
    if computed is not None:
        fresh = set(pending)
        computed.update(i for i, jid in enumerate(ids) if jid in fresh)
    return [results[jid] for jid in ids]


def _exit_with_parent(parent_pid: int) -> None:
    """Pool-worker initializer: the worker exits when its driver dies (even by ``kill -9``):
    Linux's parent-death signal where available, and in every case a daemon thread that
    notices the re-parenting within ``ORPHAN_POLL_SECONDS``."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):  # no prctl: the daemon thread below suffices
            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    if os.getppid() != parent_pid:  # the driver died before we got here
        os._exit(1)

    # Ctrl-C reaches the whole process group: the driver alone decides (it stops the pool,
    # :func:`_stop_pool`), so a worker neither dies with a traceback nor fails its job
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while True:
            time.sleep(ORPHAN_POLL_SECONDS)
            if os.getppid() != parent_pid:
                os._exit(1)

    threading.Thread(target=watch, name="census-plb-orphan-watch", daemon=True).start()


#: how often a pool worker checks that its driver is alive.
ORPHAN_POLL_SECONDS = 1.0


#: seconds a terminated pool worker is given to exit before it is killed
STOP_GRACE_SECONDS = 0.5


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Stop a pool now (Ctrl-C, or the driver failing): cancel the pending jobs and terminate the
    workers instead of waiting for their running jobs (which can take minutes); finished results
    are already cached, the running ones are lost. A worker that outlives SIGTERM by
    :data:`STOP_GRACE_SECONDS` is killed."""
    # the executor keeps no public handle on its processes; _processes is {pid: Process}
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        if p.is_alive():
            p.terminate()
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
        if p.is_alive():
            p.kill()
            p.join(STOP_GRACE_SECONDS)


def _run_pool(fn, unique, pending, n_workers, finish) -> None:
    ctx = multiprocessing.get_context("spawn")
    first_error: BaseException | None = None
    pool = ProcessPoolExecutor(
        max_workers=n_workers, mp_context=ctx, initializer=_exit_with_parent, initargs=(os.getpid(),)
    )
    try:
        futures = {pool.submit(_timed_call, fn, unique[jid]): jid for jid in pending}
        remaining = set(futures)
        while remaining:
            done, remaining = wait(remaining, return_when=FIRST_COMPLETED)
            for fut in done:
                jid = futures[fut]
                if fut.cancelled():
                    continue
                exc = fut.exception()
                if exc is not None:
                    if first_error is None:
                        first_error = JobError(jid, unique[jid], f"{type(exc).__name__}: {exc}")
                        first_error.__cause__ = exc
                        for other in remaining:
                            other.cancel()  # running jobs finish and are still cached
                    continue
                try:
                    finish(jid, fut.result())
                except JobError as err:
                    if first_error is None:
                        first_error = err
                        for other in remaining:
                            other.cancel()
    except BaseException:  # Ctrl-C (KeyboardInterrupt) or a failure of the driver: stop at once
        _stop_pool(pool)
        raise
    pool.shutdown(wait=True)  # after a job error the running jobs finish, and are still cached
    if first_error is not None:
        raise first_error


_THREADS_FIX = (
    "start every worker with one thread (`dask worker ADDRESS --nthreads 1 --nworkers N`, or "
    "LocalCluster(threads_per_worker=1, processes=True))"
)


def _worker_threads(client) -> dict[str, int]:
    """{worker address: nthreads} of every worker the scheduler knows now."""
    try:
        return {str(a): int(n) for a, n in client.nthreads().items()}
    except Exception:
        try:
            info = client.scheduler_info(n_workers=-1)
        except TypeError:
            info = client.scheduler_info()
        return {str(a): int(w.get("nthreads", 1)) for a, w in info.get("workers", {}).items()}


def check_dask_workers(client) -> None:
    """Refuse a Dask cluster whose workers run jobs in threads of one process.

    The accountant's working precision (python-flint's ``ctx.prec``, mpmath's ``mp.prec``) is
    process-global state that the engines set and restore around their computations; two jobs in
    threads of one process would race on it and could silently compute at the wrong precision.
    So every worker must have ``nthreads == 1``, and at most one in-process (``inproc://``)
    worker thread may share the driver's process.  Workers that join later are checked again
    by each job (:func:`_dask_call`).

    Raises:
        ValueError: naming the worker and the fix (``--nthreads 1``).
    """
    threads = _worker_threads(client)
    for addr, n in sorted(threads.items()):
        if n > 1:
            raise ValueError(
                f"run_jobs: Dask worker {addr} runs {n} threads, but the accountant's precision "
                f"(flint ctx.prec, mpmath mp.prec) is process-global and threads would race; "
                f"{_THREADS_FIX}"
            )
    inproc = sorted(a for a in threads if a.startswith("inproc://"))
    if len(inproc) > 1:
        raise ValueError(
            f"run_jobs: {len(inproc)} in-process Dask workers ({', '.join(inproc)}) share one process, "
            f"and the accountant's precision (flint ctx.prec, mpmath mp.prec) is process-global; "
            f"use worker processes: {_THREADS_FIX}"
        )


def _dask_call(fn: Callable, spec: Any) -> tuple[Any, float]:
    """Worker-side :func:`_timed_call` that refuses to run on a multi-threaded worker (one that
    joined after :func:`check_dask_workers`)."""
    try:
        from distributed import get_worker  # noqa: PLC0415 - optional (the distributed extra): only with a Dask scheduler

        w = get_worker()
        n = int(getattr(getattr(w, "state", None), "nthreads", None) or getattr(w, "nthreads", 1) or 1)
    except (ImportError, ValueError):  # not on a worker (e.g. a test calling it directly)
        n = 1
    if n > 1:
        raise RuntimeError(
            f"this Dask worker runs {n} threads; the accountant's precision is process-global; {_THREADS_FIX}"
        )
    return _timed_call(fn, spec)


#: seconds to wait for a Dask scheduler given by its address to answer
SCHEDULER_CONNECT_SECONDS = 2.0


class SchedulerUnreachableError(ValueError):
    """The Dask scheduler address given cannot be reached (a ValueError: the address is bad input)."""


#: address schemes a separate Dask scheduler can be reached by.
SCHEDULER_SCHEMES = ("tcp", "tls", "ucx", "ws", "wss")


def check_scheduler_address(address: str | None, where: str = "--scheduler") -> str | None:
    """A Dask scheduler address given on a command line, checked before any work starts:
    ``tcp://HOST:PORT`` (or another network scheme, or bare ``HOST:PORT``).  ``inproc://``
    addresses live inside one Python process and cannot be reached from a command."""
    if address is None:
        return None
    a = str(address).strip()
    scheme, sep, rest = a.partition("://")
    if not sep:
        scheme, rest = "tcp", a
    if scheme == "inproc":
        raise ValueError(
            f"{where} {a}: an inproc:// scheduler exists only inside its own Python process; start one "
            f"with `dask scheduler` and give its tcp://HOST:PORT address"
        )
    if scheme not in SCHEDULER_SCHEMES or ":" not in rest or not rest.rsplit(":", 1)[1].isdigit():
        raise ValueError(
            f"{where} {a}: not a Dask scheduler address (expected tcp://HOST:PORT, e.g. tcp://127.0.0.1:8786)"
        )
    return a


def _run_dask(fn, unique, pending, scheduler, finish) -> None:
    try:
        import distributed  # noqa: PLC0415 - optional (the distributed extra): only with a Dask scheduler
    except ImportError:
        raise ImportError(
            "run_jobs: a Dask scheduler was given but 'distributed' is not installed; "
            "install the optional extra: pip install 'census-plb[distributed]'"
        ) from None
    own = not hasattr(scheduler, "submit")
    if own:
        try:
            client = distributed.Client(scheduler, timeout=SCHEDULER_CONNECT_SECONDS)
        except (OSError, TimeoutError) as err:  # Dask's own default waits 30 s, then says little
            raise SchedulerUnreachableError(
                f"no Dask scheduler answered at {scheduler} within {SCHEDULER_CONNECT_SECONDS:g} s "
                f"({type(err).__name__}); start one with `dask scheduler` and give its tcp://HOST:PORT address"
            ) from err
    else:
        client = scheduler
    try:
        check_dask_workers(client)
        futures = {
            client.submit(_dask_call, fn, unique[jid], key=f"census-plb-{jid}", pure=False): jid for jid in pending
        }
        first_error: BaseException | None = None
        for fut in distributed.as_completed(list(futures)):
            jid = futures[fut]
            if first_error is not None:
                continue
            if fut.status == "error":
                exc = fut.exception()
                first_error = JobError(jid, unique[jid], f"{type(exc).__name__}: {exc}")
                first_error.__cause__ = exc
                client.cancel([f for f in futures if not f.done()])
                continue
            if fut.status == "cancelled":
                continue
            try:
                finish(jid, fut.result())
            except JobError as err:
                first_error = err
                client.cancel([f for f in futures if not f.done()])
        if first_error is not None:
            raise first_error
    finally:
        if own:
            client.close()
