"""Host arrays into one device buffer through a reused page-locked buffer, by copy threads; the
launchers' per-thread streams.

Used by the launchers (ksw_extd2.py, ksw_extend2.py): `Staging(arrays, stream)` lays the arrays out side by side in
one device buffer (each at a 256-byte aligned offset, followed by at least 4 bytes of slack for the
kernels' word loads); `send(i, lo, hi)` has the copy threads put bytes [lo, hi) of array i into the
pinned buffer in pieces, each piece followed at once by its asynchronous DMA on the stream;
`send_span(i0, i1, stream)` copies arrays i0..i1-1 in the calling thread and sends them with one DMA
on another stream; `ready()` waits until everything sent so far is enqueued and returns an event on
the stream after it. The
pinned buffer is kept per (device, calling thread, slot) and reused by that thread's next call, so
`close()` (waiting for every copy) must run before the caller returns. `stream(key)` is a
non-blocking stream per (device, calling thread, key), kept across calls.
"""
from __future__ import annotations

import ctypes
import os
import threading

import numpy as np

PIECE = 4 << 20                                  # bytes per staged piece (one DMA each)
THREADS = min(8, os.cpu_count() or 1)            # copy threads

_pinned: dict = {}
_pool = None
_streams: dict = {}


def stream(key):
    """A non-blocking stream per (device, calling thread, key), kept across calls."""
    import cupy

    k = (cupy.cuda.Device().id, threading.get_ident(), key)
    st = _streams.get(k)
    if st is None:
        st = _streams[k] = cupy.cuda.Stream(non_blocking=True)
    return st


def pinned_buffer(slot, n: int) -> np.ndarray:
    """A page-locked host buffer (uint8) of at least n bytes, kept per (device, calling thread, slot)."""
    import cupy

    key = (cupy.cuda.Device().id, threading.get_ident(), slot)
    buf = _pinned.get(key)
    if buf is None or buf.size < n:
        size = max(n, 1 << 20) * 5 // 4
        buf = _pinned[key] = np.frombuffer(cupy.cuda.alloc_pinned_memory(size), np.uint8, size)
    return buf


def copy_pool():
    """The process's copy threads (THREADS of them), started on first use."""
    global _pool
    if _pool is None:
        from concurrent.futures import ThreadPoolExecutor

        _pool = ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="gpuext-h2d")
    return _pool


class Staging:
    """The arrays (contiguous, any dtype) in one device buffer, sent piece by piece (see the module)."""

    def __init__(self, arrays, stream, slot="staging"):
        import cupy

        self.flat = [np.ascontiguousarray(a).reshape(-1).view(np.uint8) for a in arrays]
        self.offs, n = [], 0
        for a in self.flat:
            self.offs.append(n)
            n += (a.nbytes + 4 + 255) // 256 * 256
        n = max(n, 256)
        self.buf = pinned_buffer(slot, n)
        self.dev = cupy.empty(n, np.uint8)
        self.stream = stream
        self.futs: list = []
        self._dev_id = cupy.cuda.Device().id

    def view(self, i: int, dtype):
        """Array i on the device (a view of the buffer) as dtype."""
        a = self.flat[i]
        return self.dev[self.offs[i]:self.offs[i] + a.nbytes].view(dtype)

    def _dma(self, lo, hi, stream):
        import cupy

        cupy.cuda.runtime.memcpyAsync(self.dev.data.ptr + lo, self.buf.ctypes.data + lo, hi - lo, 1, stream.ptr)

    def _piece(self, a, o, lo, hi):
        import cupy

        cupy.cuda.runtime.setDevice(self._dev_id)
        ctypes.memmove(self.buf.ctypes.data + o + lo, a.ctypes.data + lo, hi - lo)   # without the GIL
        self._dma(o + lo, o + hi, self.stream)

    def send(self, i: int, lo: int = 0, hi: int | None = None, threaded: bool = True) -> None:
        """Bytes [lo, hi) of array i (default: all of it) to the device."""
        a, o = self.flat[i], self.offs[i]
        hi = a.nbytes if hi is None else hi
        for p in range(lo, hi, PIECE):
            q = min(hi, p + PIECE)
            if threaded:
                self.futs.append(copy_pool().submit(self._piece, a, o, p, q))
            else:
                self._piece(a, o, p, q)

    def send_span(self, i0: int, i1: int, stream) -> None:
        """Arrays i0..i1-1 whole, copied by the calling thread, then one DMA on `stream` (many small
        arrays cost one driver call, and need not wait behind the pieces of the copy threads)."""
        for i in range(i0, i1):
            a, o = self.flat[i], self.offs[i]
            ctypes.memmove(self.buf.ctypes.data + o, a.ctypes.data, a.nbytes)
        self._dma(self.offs[i0], self.offs[i1 - 1] + self.flat[i1 - 1].nbytes, stream)

    def ready(self):
        """An event on the stream after every piece sent so far."""
        for f in self.futs:
            f.result()
        self.futs = []
        return self.stream.record()

    def close(self) -> None:
        """Wait for the copy threads (the pinned buffer is free for the next call after a sync)."""
        for f in self.futs:
            f.result()
        self.futs = []
