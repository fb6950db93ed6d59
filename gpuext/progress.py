"""Progress on stderr while mapping: reads, bases, reads/s, backend busy share, CPU fallbacks.

Shown only when stderr is a terminal (and not with --quiet); periodic lines in minimap2's log style.
The library side is a callback-free poll of the engine's statistics (gpuext/engine/rounds.py).
"""
from __future__ import annotations

import sys
import threading
import time

from . import log


class Progress:
    """A background thread printing a line every `interval` seconds until stopped."""

    def __init__(self, stats, interval: float = 10.0, stream=None, lock=None):
        self.stats = stats
        self.lock = lock or threading.Lock()   # the lock under which the engine updates stats
        self.interval = interval
        self.stream = stream or sys.stderr
        self._stop = threading.Event()
        self._t0 = time.perf_counter()
        self._thread = threading.Thread(target=self._run, name="gpuext-progress", daemon=True)

    @staticmethod
    def wanted(quiet: bool, stream=None) -> bool:
        stream = stream or sys.stderr
        return not quiet and hasattr(stream, "isatty") and stream.isatty()

    def line(self) -> str:
        st = self.stats
        real = max(time.perf_counter() - self._t0, 1e-9)
        with self.lock:   # pipeline threads add to these while we read
            fb = sum(j for j, _ in st.cpu_fallback.values())
        return (f"{st.done_reads} reads, {st.done_bases / 1e6:.1f} Mb, {st.done_reads / real:.1f} reads/s, "
                f"backend busy {100 * min(1.0, st.time['backend'] / real):.0f}%, CPU fallback {fb} jobs")

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            log.info("gpuext::progress", self.line())

    def start(self) -> "Progress":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
