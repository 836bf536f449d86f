"""The explorer's "Certify on all pairs": the all-pairs confirmation of one setting, in the background.

:class:`Certifier` runs :func:`optimizer.jobs.confirm.confirm` — the same cached, resumable runner the
optimizer uses (a process pool, or Dask when a scheduler address is given) — for one allocation in a
background thread, with one round and no recalibration: the verdict is about exactly the allocation
the page shows. Results are kept per allocation (its content hash, :func:`allocation_digest`): the
pair results in ``<root>/<digest>/cache`` (so a repeat is read from the cache) and the verdict in
memory, so moving back to a certified setting shows its verdict at once. Progress is the number of
pair results in that cache over the number of pairs.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accountant.decimals import decimal_string, exact_fraction
from optimizer.census.allocation import Allocation
from optimizer.jobs import confirm as confirm_mod
from optimizer.jobs.provenance import allocation_digest
from optimizer.search import Target

__all__ = ["Certifier", "Status"]


@dataclass
class Status:
    """Where one certification stands."""

    state: str  # "running", "confirmed", "violated", "failed"
    n_pairs: int
    done: int = 0  # pair results stored so far
    seconds: float = 0.0
    text: str = ""  # the verdict in words
    worst_pair: tuple[int, int] | None = None
    started: float = field(default_factory=time.perf_counter)

    @property
    def fraction(self) -> float:
        return 1.0 if self.state != "running" else min(self.done / max(self.n_pairs, 1), 0.99)


class Certifier:
    """Background all-pairs certifications, one per allocation (module docstring)."""

    def __init__(self, root: str | Path, workers: int = 2, scheduler: str | None = None):
        self.root, self.workers, self.scheduler = Path(root), workers, scheduler
        self._status: dict[str, Status] = {}
        self._lock = threading.Lock()

    @staticmethod
    def key(alloc: Allocation, points: Sequence[Target]) -> str:
        """The key of one certification: the allocation's content and the promised points."""
        promise = hashlib.sha256(repr([(t.epsilon, t.delta) for t in points]).encode()).hexdigest()[:16]
        return f"{allocation_digest(alloc)[:32]}-{promise}"

    def start(self, alloc: Allocation, points: Sequence[Target]) -> str:
        """Start certifying ``alloc`` against every promised point (unless it is running or done); its key."""
        key = self.key(alloc, points)
        with self._lock:
            if key in self._status and self._status[key].state in ("running", "confirmed", "violated"):
                return key
            n = len(confirm_mod.paths_of(alloc))
            self._status[key] = Status("running", n * (n + 1) // 2)
        threading.Thread(target=self._run, args=(key, alloc, list(points)), daemon=True).start()
        return key

    def status(self, key: str) -> Status | None:
        """The status of ``key`` (``None``: never started); progress counted from its cache."""
        with self._lock:
            st = self._status.get(key)
        if st is not None and st.state == "running":
            cache = self.root / key / "cache"
            st.done = sum(1 for p in cache.glob("*.json")) if cache.is_dir() else 0
            st.seconds = time.perf_counter() - st.started
        return st

    def _run(self, key: str, alloc: Allocation, points: list[Target]) -> None:
        st = self._status[key]
        try:
            conf = confirm_mod.confirm(
                alloc,
                points if len(points) > 1 else points[0],
                cache_dir=self.root / key / "cache",
                workers=self.workers,
                scheduler=self.scheduler,
                max_rounds=1,
                progress=False,
                label="the explorer's setting",
            )
        except Exception as exc:  # the page must say what went wrong, never crash the server
            st.state, st.text = "failed", f"certification failed: {type(exc).__name__}: {exc}"
            return
        st.seconds = time.perf_counter() - st.started
        st.worst_pair = tuple(conf.worst_pair)  # type: ignore[assignment]
        st.state, st.text = ("confirmed" if conf.passed else "violated"), verdict_text(conf)
        st.done = st.n_pairs


def verdict_text(conf: Any) -> str:
    """The verdict of a :class:`optimizer.jobs.confirm.Confirmation` in words: its worst pair as
    :meth:`~optimizer.jobs.confirm.Confirmation.worst_text` words it (named only when certain), and a
    promise called broken only when a pair's lower bound is above it."""
    pair = f"[{conf.worst_pair[0]}, {conf.worst_pair[1]}]"
    at = "" if len(conf.points) <= 1 else f" at δ = {conf.worst_point.delta}"
    if conf.passed:
        return f"confirmed on all {conf.n_pairs} pairs{at} (largest δ ≤ {_up(conf.worst_delta)}; {conf.worst_text()})"
    promised = conf.worst_point.delta_fraction if conf.worst_point is not None else None
    lower = exact_fraction(conf.worst_delta.lower)
    if promised is not None and lower > promised:
        return f"NOT kept{at}: pair {pair} has δ ≥ {decimal_string(lower, 6, 'down')}, above the promise"
    return (
        f"NOT certified{at}: pair {pair}'s δ ≤ {_up(conf.worst_delta)} reaches above the promise ({conf.worst_text()})"
    )


def _up(bound: Any) -> str:
    """A bound's upper end, 6 digits rounded up."""
    return decimal_string(exact_fraction(bound.upper), 6, "up")
