"""Backends compute a JobBatch into a ResultBatch: `cpu` (the stock ksw2 code) and `cuda` (GPU kernels).

A backend returns its results and, per reason, the jobs and DP cells it handed to the cpu fallback.
`resolve` makes the backend that `cuda.pick` chose for `--backend auto|cpu|cuda` (gpuext map's BackendChoice).
Neighbours: gpuext/engine/rounds.py calls `run`; gpuext/backends/cpu.py and gpuext/backends/cuda/.
"""
from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

from .. import timeline

if TYPE_CHECKING:
    import numpy as np

    from ..engine.jobs import JobBatch, ResultBatch
# (NumPy and the job format are imported where used: `gpuext map` imports this package, for cuda.pick, while
# another thread imports NumPy)

Fallback = dict  # reason -> [jobs, cells]


class CpuBackend:
    """The stock ksw2 code on n threads: the reference and the fallback."""

    name = "cpu"

    def __init__(self, n_threads: int = 1):
        self.n_threads = n_threads

    def run(self, batch: JobBatch) -> tuple[ResultBatch, Fallback]:
        from . import cpu

        return cpu.run(batch, self.n_threads), {}


def _primary_context(gpu: int) -> None:
    """cuda.retain_primary_context, timed (CudaBackend is only made where cuda.device_count found CuPy)."""
    from . import cuda

    t = timeline.now()
    cuda.retain_primary_context(gpu)
    timeline.span("set-up: CUDA context (driver)", t)


class CudaBackend:
    """ksw_extd2 and ksw_extz2 jobs on the GPU; every job the kernels do not take runs on the cpu backend."""

    name = "cuda"

    def __init__(self, n_threads: int = 1, gpu: int = 0, gpu_mem: int | None = None, cpu_if_set_up_fails: bool = False):
        from .cuda import device_count, ksw_extd2, ksw_extz2

        n = device_count()
        if not 0 <= gpu < n:
            raise ValueError(f"no such GPU (the driver sees {n})")
        self.kernel, self.kernel_z2 = ksw_extd2, ksw_extz2
        self.cpu = CpuBackend(n_threads)
        self.gpu, self.gpu_mem = gpu, gpu_mem
        self.device = None   # cupy.cuda.Device(gpu), once set up (CuPy's current device is per thread: run() sets it)
        # Backend steps of different rounds run on different pipeline threads: one at a time on the
        # GPU, so that each call has the whole memory budget (the CPU rounds still overlap them).
        self.lock = threading.Lock()
        # CuPy's import (about 0.5 s), the CUDA context (about 0.6 s with 32 hardware queues, made by the
        # driver with the GIL released: minimap2's pipeline needs the GIL at every step), the kernels and a
        # first small call are set up by a thread of their own while minimap2 builds its index and maps the
        # first batch's reads; ready() waits for it. Not a daemon, so that the process never ends
        # inside a CUDA call of it; close() makes it stop at its next step (a run that maps nothing).
        # cpu_if_set_up_fails (--backend auto): a failed set-up sends every job to the cpu backend.
        self.cpu_if_set_up_fails = cpu_if_set_up_fails
        self._warm_error: BaseException | None = None
        self._retried = False
        self._stop = threading.Event()
        self._warm = threading.Thread(target=self._warm_up, name="gpuext-cuda-warm-up")
        self._warm.start()

    def _warm_up(self) -> None:
        """The set-up; self.device is set last, and only when every step succeeded (ready()'s flag)."""
        try:
            if self._stop.is_set():
                return
            # the context by the driver in a thread of its own (the GIL released), CuPy's import meanwhile
            ctx = threading.Thread(target=_primary_context, args=(self.gpu,), name="gpuext-cuda-context")
            ctx.start()
            t = timeline.now()
            try:
                import cupy
            finally:
                ctx.join()
            timeline.span("set-up: import cupy", t)
            device = cupy.cuda.Device(self.gpu)
            with device:
                t = timeline.now()
                device.compute_capability   # (the runtime takes the primary context, or makes it)
                timeline.span("set-up: CuPy on the context", t)
                if self.gpu_mem is None:
                    self.gpu_mem = self.kernel.default_gpu_mem()
                for k in (self.kernel, self.kernel_z2):
                    if self._stop.is_set():
                        return
                    t = timeline.now()
                    k.warm_up()
                    timeline.span(f"set-up: {k.__name__.rsplit('.', 1)[-1]} module and warm-up call", t)
            self.device = device
        except BaseException as e:
            self._warm_error = e
            if not self._retried:   # said at once, while minimap2 goes on (ready() retries once)
                from .. import log

                log.warn("gpuext::backend", f"GPU {self.gpu} set-up failed ({self._why()})")

    def _why(self) -> str:
        e = self._warm_error
        if e is None:
            return "stopped by close()"
        hint = " (install gpuext[gpu] with a CuPy for this CUDA)" if isinstance(e, ImportError) else ""
        return f"{type(e).__name__}: {e}{hint}"

    def close(self) -> None:
        """The set-up thread stops at its next step (for a run that ends without mapping a batch)."""
        self._stop.set()

    def ready(self) -> bool:
        """Wait for the set-up thread: True when the GPU is set up. A failed set-up is tried once more here;
        if that fails too, False when the cpu backend computes the jobs instead (cpu_if_set_up_fails, said
        once), else raise the error."""
        waited, t = self._warm.is_alive(), timeline.now()
        self._warm.join()
        if waited:
            timeline.span("waited for the cuda set-up", t)
        if self.device is not None:
            return True
        if self._stop.is_set():
            raise RuntimeError("the cuda backend was closed")
        from .. import log

        with self.lock:   # (threads that come meanwhile wait here for the one retry)
            if self.device is None and not self._retried:
                self._retried = True
                self._warm_up()
                if self.device is None and self.cpu_if_set_up_fails:
                    log.warn("gpuext::backend", f"GPU {self.gpu} set-up failed again ({self._why()}): the cpu backend "
                                                   "computes the extension jobs")
            if self.device is not None:
                return True
        if not self.cpu_if_set_up_fails:
            raise RuntimeError(f"GPU {self.gpu} set-up failed: {self._why()}") from self._warm_error
        return False

    def host_alloc(self, n: int, dtype) -> np.ndarray:
        """Host memory for a batch's job arrays (the engine exports into it): ordinary memory, which run()
        stages through its reused page-locked buffer by the copy threads. $GPUEXT_PINNED_JOBS=1: page-locked
        memory from CuPy's pool, which run() sends without the staging copy. That saves a few ms in a warm
        process, but page-locking a batch's fresh blocks costs more: on the 10,000 simulated ONT reads
        (one batch) the export took 0.23 s instead of 0.05 and the first call 0.18 s instead of 0.14
        (performance.md, thirty-first session)."""
        import numpy as np

        if os.environ.get("GPUEXT_PINNED_JOBS", "0") != "1":
            return np.empty(n, dtype)
        if not self.ready():
            return np.empty(n, dtype)
        from .cuda.staging import pooled_pinned

        with self.device:   # (a pipeline thread's current device is GPU 0 until it says otherwise)
            return pooled_pinned(n, dtype)

    def run(self, batch: JobBatch) -> tuple[ResultBatch, Fallback]:
        if not self.ready():   # (every job a cpu fallback)
            return self.cpu.run(batch)[0], {"GPU set-up failed": [batch.n, int(batch.cells().sum())]}
        with self.lock, self.device:
            t = timeline.now()
            try:
                return self._run(batch)
            finally:
                if timeline.on:
                    timeline.span(f"cuda run ({batch.n} jobs)", t)

    def _run(self, batch: JobBatch) -> tuple[ResultBatch, Fallback]:
        import numpy as np

        from ..engine.jobs import KERNEL_EXTZ2, ResultBatch

        t = timeline.now()
        reasons = self.kernel.supports(batch, self.gpu_mem)
        z2 = batch.kernel == KERNEL_EXTZ2   # one gap cost: the extz2 kernel's (the same reason codes)
        if z2.any():
            reasons[z2] = self.kernel_z2.supports(batch, self.gpu_mem)[z2]
        on_cpu = np.flatnonzero(reasons != 0)
        parts = []
        for kernel, on_gpu in ((self.kernel, np.flatnonzero((reasons == 0) & ~z2)),
                               (self.kernel_z2, np.flatnonzero((reasons == 0) & z2))):
            if len(on_gpu):
                every = len(on_gpu) == batch.n   # (then no job list goes to the device)
                timeline.span("  supports", t)
                parts.append((on_gpu, kernel.run(batch, None if every else on_gpu, self.gpu_mem)))
                if timeline.on:
                    ls = kernel.last_stats
                    timeline.mark("  " + kernel.__name__.rsplit(".", 1)[-1] + " ms: " + ", ".join(
                        f"{k[2:]} {1e3 * v:.1f}" for k, v in ls.items() if k.startswith("t_") and isinstance(v, float)))
                t = timeline.now()
        fallback: Fallback = {}
        if len(on_cpu):
            parts.append((on_cpu, self.cpu.run(batch.subset(on_cpu))[0]))
            cells = batch.cells()
            for code in np.unique(reasons[on_cpu]):
                sel = reasons == code
                fallback[self.kernel.REASONS[int(code)]] = [int(sel.sum()), int(cells[sel].sum())]
        res = ResultBatch.assemble(batch.n, parts)
        timeline.span("  cpu jobs, assemble", t)
        return res, fallback


class CorruptingBackend(CpuBackend):
    """For tests only (GPUEXT_TEST_BACKENDS=1): the cpu results with one job's score changed."""

    name = "corrupt"

    def run(self, batch: JobBatch) -> tuple[ResultBatch, Fallback]:
        res, fb = super().run(batch)
        if res.n:
            res.score[res.n // 2] += 1
            res.max[res.n // 2] += 1
        return res, fb


def resolve(name: str, n_threads: int, gpu: int = 0, gpu_mem: int | None = None, auto: bool = False):
    """The backend object for the backend NAME that cuda.pick chose for --backend (it asked the driver and said
    why a GPU cannot be used), or raise ValueError saying why it cannot be made. auto: the user asked for auto,
    so that a cuda whose set-up fails falls back to the cpu backend."""
    if name == "cpu":
        return CpuBackend(n_threads)
    if name == "cuda":
        try:
            return CudaBackend(n_threads, gpu, gpu_mem, cpu_if_set_up_fails=auto)
        except Exception as e:  # a GPU that does not exist, among others
            raise ValueError(f"--backend cuda: GPU {gpu} cannot be used: {e}") from None
    if name == "corrupt" and os.environ.get("GPUEXT_TEST_BACKENDS") == "1":
        return CorruptingBackend(n_threads)
    raise ValueError(f"unknown backend '{name}'")
