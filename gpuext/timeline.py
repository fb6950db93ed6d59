"""A run's timeline for profiling, off unless $GPUEXT_TIMELINE names a file.

`mark(what)` notes a moment, `span(what, t0[, t1])` a stretch from t0 (`now()`) to t1 or now; both record the wall
clock (`time.time()`, so that a shell can put the process's own start and end beside them) and the thread.
At the process's exit the records go to the file as TSV: what, thread, start, end (end = start for a mark).
Used by gpuext/cli/map.py (the run's stages), gpuext/engine/rounds.py (every pipeline step) and
gpuext/backends (the cuda set-up thread and the waits for it). Costs nothing when off.
"""
from __future__ import annotations

import atexit
import os
import threading
import time

_path = os.environ.get("GPUEXT_TIMELINE") or None
_rows: list[tuple[str, str, float, float]] = []
_lock = threading.Lock()
on = _path is not None


def now() -> float:
    return time.time()


def span(what: str, t0: float, t1: float | None = None) -> None:
    if on:
        t1 = time.time() if t1 is None else t1
        with _lock:
            _rows.append((what, threading.current_thread().name, t0, t1))


def mark(what: str) -> None:
    if on:
        t = time.time()
        span(what, t, t)


def _write() -> None:
    mark("exit")
    with open(_path, "w") as f:
        f.write("what\tthread\tstart\tend\n")
        for what, thread, t0, t1 in sorted(_rows, key=lambda r: r[2]):
            f.write(f"{what}\t{thread}\t{t0:.4f}\t{t1:.4f}\n")


if on:
    atexit.register(_write)
