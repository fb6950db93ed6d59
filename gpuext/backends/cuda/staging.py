"""Host arrays into one device buffer through a shared page-locked buffer, by copy threads; the
launchers' per-thread streams.

Used by the launchers (ksw_extd2.py, ksw_extend2.py): `Staging(arrays, stream)` lays the arrays out side by side in
one device buffer (each at a 256-byte aligned offset, followed by at least 4 bytes of slack for the
kernels' word loads); `send(i, lo, hi)` has the copy threads put bytes [lo, hi) of array i into the
pinned buffer in pieces, each piece followed at once by its asynchronous DMA on the stream;
`send_span(i0, i1, stream)` copies arrays i0..i1-1 in the calling thread and sends them on another
stream, each run of neighbours in one DMA; `ready()` waits until everything sent so far is enqueued and returns an event on
the stream after it. `close()` waits for every copy.

The pinned buffers are shared by the calling threads (minimap2's pipeline calls the backend from a different
thread for each batch in flight): a Staging leases the smallest idle one that fits, and the launcher gives its
thread's leases back with `release()` once its streams are synchronized (no DMA reads them any more). When none
fits, the Staging sends from the arrays where they are, in ordinary memory (`cudaMemcpyAsync` from pageable
memory: about 25 ms for 160 MB on the H200, against about 90 ms to page-lock a fresh buffer of that size and 7 ms
to stage through one that is ready), and once the call has released its buffers, one of that size class (a power
of two) is made in the background for the calls after. (Made during the call, page-locking slowed its pageable
copies: 160 MB took 160 ms to go up. Made at set-up, it held up the first call: performance.md, thirty-second
session.)
`stream(key, priority)` is a
non-blocking stream per (device, calling thread, key, priority), kept across calls. `pooled_pinned(n)` is
page-locked memory from CuPy's pool in power-of-two blocks (result read-backs, job arrays). `page_locked(a)` is a, or a
copy of it in such memory when it is not there already (the launchers' `pin`).

An array that already lives in page-locked memory from `pinned_empty` or `pooled_pinned` (the caller
allocated its jobs there, as `gpuext bwa-replay` does, and the engine for the CUDA backend with
$GPUEXT_PINNED_JOBS=1: `CudaBackend.host_alloc`) skips the staging copy: its bytes go up in DMAs straight from it,
enqueued by the calling thread (`Staging.direct[i]`).
"""
from __future__ import annotations

import bisect
import ctypes
import os
import threading
import weakref

import numpy as np

PIECE = 4 << 20                                  # bytes per staged piece (one DMA each)
THREADS = min(8, os.cpu_count() or 1)            # copy threads

_idle: dict = {}      # device -> its idle page-locked staging buffers (uint8 arrays), shared by the threads
_leased: dict = {}    # (device, thread) -> the buffers that thread's launcher call holds until release()
_wanted: dict = {}    # (device, thread) -> sizes of the buffers its call found none idle for (made after release)
_growing: set = set()   # (device, size) of the buffers being made in the background
_lock = threading.Lock()
_pool = None
_streams: dict = {}
_regions: dict = {}   # live arrays of pinned_empty and pooled_pinned: start address -> end address
_version = 0          # bumped on every change of _regions
_index = (-1, ())     # (the _version it was built for, _regions' starts in order): is_pinned's bisection


def stream(key, priority: int = 0):
    """A non-blocking stream per (device, calling thread, key, priority), kept across calls.
    priority: 0 is the default; 1, 2, ... ask for higher scheduling priorities, clamped to what
    the device has (its block scheduler then starts pending blocks of those streams first)."""
    import cupy

    k = (cupy.cuda.Device().id, threading.get_ident(), key, priority)
    st = _streams.get(k)
    if st is None:
        # CUDA's priorities: 0 the least, lower numbers higher (clamped to the device's range)
        try:
            st = cupy.cuda.Stream(non_blocking=True, priority=-priority)
        except TypeError:   # a CuPy without the priority argument
            rt = cupy.cuda.runtime
            st = cupy.cuda.ExternalStream(rt.streamCreateWithPriority(rt.streamNonBlocking, -priority))
        _streams[k] = st
    return st


def _size_class(n: int) -> int:
    """A staging buffer's size for n bytes: a power of two of at least 1 MB."""
    return max(1 << 20, 1 << (max(n, 1) - 1).bit_length())


def _grow(dev: int, size: int) -> None:
    """Make an idle buffer of size bytes on device dev (in a background thread; a failure only means staging
    from ordinary memory again next time)."""
    import cupy

    try:
        cupy.cuda.runtime.setDevice(dev)   # (a new thread's device is GPU 0 until it says otherwise)
        buf = pinned_empty(size)
        with _lock:
            _idle.setdefault(dev, []).append(buf)
    except Exception:
        pass
    finally:
        with _lock:
            _growing.discard((dev, size))


def lease(n: int) -> np.ndarray | None:
    """The smallest idle page-locked staging buffer of at least n bytes, held by the calling thread until it
    calls release(); None when no idle one fits: the caller sends from ordinary memory, and release() has a
    buffer of n's size class made in the background for the calls after."""
    import cupy

    dev, me = cupy.cuda.Device().id, threading.get_ident()
    with _lock:
        idle = _idle.setdefault(dev, [])
        fits = [k for k, b in enumerate(idle) if b.size >= n]
        if fits:
            buf = idle.pop(min(fits, key=lambda k: idle[k].size))   # (by place: == compares arrays elementwise)
            _leased.setdefault((dev, me), []).append(buf)
            return buf
        _wanted.setdefault((dev, me), set()).add(_size_class(n))
    return None


def release() -> None:
    """The calling thread's leased staging buffers back to the idle ones (after its streams are synchronized),
    and the buffers its call found none idle for made in the background."""
    import cupy

    dev, me = cupy.cuda.Device().id, threading.get_ident()
    with _lock:
        _idle.setdefault(dev, []).extend(_leased.pop((dev, me), []))
        sizes = sorted(s for s in _wanted.pop((dev, me), ()) if (dev, s) not in _growing)
        _growing.update((dev, s) for s in sizes)
    for s in sizes:   # (not daemons: the process's exit waits for them, never ends inside the driver's call)
        try:
            threading.Thread(target=_grow, args=(dev, s), name="gpuext-pin").start()
        except RuntimeError:   # (no thread to be had: the calls after send from ordinary memory)
            with _lock:
                _growing.discard((dev, s))


def pooled_pinned(n: int, dtype=np.uint8) -> np.ndarray:
    """A page-locked host array of n elements from CuPy's pinned pool, its block sized to a power of
    two so that calls of similar sizes reuse the pool's blocks (the launchers' result read-backs, the
    engine's job arrays for the CUDA backend: those go to the device without the staging copy; views
    of the array keep the block)."""
    import cupy

    dt = np.dtype(dtype)
    nb = max(1, n * dt.itemsize)
    a = np.frombuffer(cupy.cuda.alloc_pinned_memory(1 << (nb - 1).bit_length()), dt, n)
    _register(a, nb)
    return a


def pinned_empty(n: int, dtype=np.uint8) -> np.ndarray:
    """A new page-locked host array of n elements, its own allocation (not CuPy's pinned pool, which
    keeps freed blocks: given back to the system with the array and its views); the launchers send
    it to the device without the staging copy."""
    import cupy

    dt = np.dtype(dtype)
    nb = max(1, n * dt.itemsize)
    a = np.frombuffer(cupy.cuda.PinnedMemoryPointer(cupy.cuda.PinnedMemory(nb), 0), dt, n)
    _register(a, nb)
    return a


def page_locked(a: np.ndarray, alloc=pooled_pinned) -> np.ndarray:
    """a itself when it already lies in page-locked memory (is_pinned), else a copy in a new array of
    alloc (pooled_pinned or pinned_empty): the launchers' pin(), which put a batch where they send it from."""
    if is_pinned(a):
        return a
    h = alloc(a.size, a.dtype)
    h[:] = a
    return h


def _register(a: np.ndarray, nb: int) -> None:
    """Record a's nb bytes as page-locked (for is_pinned) while a lives."""
    global _version
    start = a.ctypes.data
    _regions[start] = start + nb
    _version += 1
    weakref.finalize(a, _unregister, start)


def _unregister(start: int) -> None:
    global _version
    _regions.pop(start, None)
    _version += 1


def is_pinned(a: np.ndarray) -> bool:
    """Whether a is contiguous and its bytes lie in one allocation of pinned_empty or pooled_pinned (the
    allocations do not overlap: the one to check is the last that starts at or before a; a launcher call
    asks this of each of its arrays, so it is a bisection over the sorted starts, rebuilt after a change,
    not a pass over every live allocation)."""
    global _index
    if not a.flags.c_contiguous:
        return False
    lo = a.ctypes.data
    v, starts = _index
    if v != _version:   # (a registration racing this is seen by the next call: at worst a staged copy)
        v = _version
        starts = tuple(sorted(list(_regions)))
        _index = (v, starts)
    i = bisect.bisect_right(starts, lo) - 1
    return i >= 0 and lo + a.nbytes <= _regions.get(starts[i], -1)


def copy_pool():
    """The process's copy threads (THREADS of them), started on first use."""
    global _pool
    if _pool is None:
        from concurrent.futures import ThreadPoolExecutor

        _pool = ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="gpuext-h2d")
    return _pool


class Staging:
    """The arrays (contiguous, any dtype) in one device buffer, sent piece by piece (see the module)."""

    def __init__(self, arrays, stream):
        import cupy

        self.flat = [np.ascontiguousarray(a).reshape(-1).view(np.uint8) for a in arrays]
        self.offs, n = [], 0
        for a in self.flat:
            self.offs.append(n)
            n += (a.nbytes + 4 + 255) // 256 * 256
        n = max(n, 256)
        self.direct = [is_pinned(a) for a in self.flat]   # sent from where they are
        staged = sum(a.nbytes for a, d in zip(self.flat, self.direct) if not d)
        self.buf = lease(n) if staged else None   # None: the others too go up from where they are
        self.dev = cupy.empty(n, np.uint8)
        self.stream = stream
        self.futs: list = []
        self._dev_id = cupy.cuda.Device().id

    def view(self, i: int, dtype):
        """Array i on the device (a view of the buffer) as dtype."""
        a = self.flat[i]
        return self.dev[self.offs[i]:self.offs[i] + a.nbytes].view(dtype)

    def _dma(self, lo, hi, stream, src=None):
        import cupy

        src = self.buf.ctypes.data + lo if src is None else src
        cupy.cuda.runtime.memcpyAsync(self.dev.data.ptr + lo, src, hi - lo, 1, stream.ptr)

    def _piece(self, a, o, lo, hi):
        import cupy

        cupy.cuda.runtime.setDevice(self._dev_id)
        if self.buf is None:   # from ordinary memory (the driver stages it; returns when it has)
            self._dma(o + lo, o + hi, self.stream, a.ctypes.data + lo)
            return
        ctypes.memmove(self.buf.ctypes.data + o + lo, a.ctypes.data + lo, hi - lo)   # without the GIL
        self._dma(o + lo, o + hi, self.stream)

    def send(self, i: int, lo: int = 0, hi: int | None = None, threaded: bool = True) -> None:
        """Bytes [lo, hi) of array i (default: all of it) to the device."""
        a, o = self.flat[i], self.offs[i]
        hi = a.nbytes if hi is None else hi
        if self.direct[i] or (self.buf is None and not threaded):   # one DMA from where it is, enqueued now
            if hi > lo:
                self._dma(o + lo, o + hi, self.stream, a.ctypes.data + lo)
            return
        for p in range(lo, hi, PIECE):
            q = min(hi, p + PIECE)
            if threaded:
                self.futs.append(copy_pool().submit(self._piece, a, o, p, q))
            else:
                self._piece(a, o, p, q)

    def send_span(self, i0: int, i1: int, stream) -> None:
        """Arrays i0..i1-1 whole on `stream`: copied by the calling thread, each run of neighbours in
        one DMA (many small arrays cost one driver call, and need not wait behind the pieces of the
        copy threads); a page-locked array in a DMA of its own, from where it is."""
        run = None   # first array of the current run of staged neighbours
        for i in range(i0, i1 + 1):
            if i < i1 and not self.direct[i] and self.buf is not None:
                a, o = self.flat[i], self.offs[i]
                ctypes.memmove(self.buf.ctypes.data + o, a.ctypes.data, a.nbytes)
                run = i if run is None else run
                continue
            if run is not None:
                self._dma(self.offs[run], self.offs[i - 1] + self.flat[i - 1].nbytes, stream)
                run = None
            if i < i1 and self.flat[i].nbytes:
                self._dma(self.offs[i], self.offs[i] + self.flat[i].nbytes, stream, self.flat[i].ctypes.data)

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
