"""Background tasks of the explorer page ("optimize from here", "Export"): one thread each, a status
the page polls, and the error of a failed task said in one line instead of crashing the server."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TaskStatus", "Tasks"]


@dataclass
class TaskStatus:
    """Where one task stands: ``state`` is "running", "done" or "failed"; ``text`` says it in words;
    ``result`` is the task function's return value once done."""

    name: str
    state: str = "running"
    text: str = ""
    result: Any = None
    started: float = field(default_factory=time.perf_counter)
    seconds: float = 0.0


class Tasks:
    """Named background tasks; a name runs at most once at a time (a second start while it runs is
    refused with the running one's status)."""

    def __init__(self) -> None:
        self._status: dict[str, TaskStatus] = {}
        self._lock = threading.Lock()

    def start(self, name: str, fn: Callable[[Callable[[str], None]], Any], text: str) -> TaskStatus:
        """Run ``fn(say)`` in a thread (``say(text)`` updates the status text); its status."""
        with self._lock:
            st = self._status.get(name)
            if st is not None and st.state == "running":
                return st
            st = self._status[name] = TaskStatus(name, text=text)
        threading.Thread(target=self._run, args=(st, fn), name=f"explorer-{name}", daemon=True).start()
        return st

    def status(self, name: str) -> TaskStatus | None:
        with self._lock:
            st = self._status.get(name)
        if st is not None and st.state == "running":
            st.seconds = time.perf_counter() - st.started
        return st

    @property
    def running(self) -> bool:
        with self._lock:
            return any(s.state == "running" for s in self._status.values())

    def _run(self, st: TaskStatus, fn: Callable[[Callable[[str], None]], Any]) -> None:
        def say(text: str) -> None:
            st.text = text

        try:
            st.result = fn(say)
            st.state = "done"
        except Exception as exc:  # the page says what went wrong; the server goes on
            st.text, st.state = f"failed: {type(exc).__name__}: {exc}", "failed"
        st.seconds = time.perf_counter() - st.started
