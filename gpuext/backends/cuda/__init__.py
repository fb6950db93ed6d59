"""The cuda backend: ksw2 extension kernels on an NVIDIA GPU through CuPy (imported lazily).

Kernels live in kernels/*.cu, are built by loader.py and launched by one same-stem module each
(ksw_extd2.py for minimap2's ksw_extd2_sse). Importing this package never imports CuPy; it asks the
driver for 32 hardware queues (CUDA_DEVICE_MAX_CONNECTIONS, unless set) for the context to come, and
`device_count` asks the driver itself.
"""
from __future__ import annotations

import ctypes
import importlib.util
import os

# Each launch class of ksw_extd2.py runs on a stream of its own. With the driver's default of 8 hardware
# queues, streams share them, and a class queued behind the pass pipeline's thousands of blocks starts
# only once they have all been dispatched: in about a third of the processes, real E. coli took
# 0.019-0.021 s instead of 0.016-0.017 s (performance.md, sixteenth session). 32 queues, the most, cost
# about 0.3 s more when the process creates its CUDA context, which is when the driver reads this, and about
# 0.2 s more at the process's exit. A value the user set wins; `gpuext map` sets 8 first (gpuext/cli/map.py:
# there the process's start and exit weigh more).
os.environ.setdefault("CUDA_DEVICE_MAX_CONNECTIONS", "32")


def device_count() -> int:
    """CUDA devices this process can use, 0 when CuPy is not installed; never raises. Asked of the driver
    (libcuda, about 0.1 s), not of CuPy, whose import takes about half a second: CudaBackend imports CuPy
    in the background. Where libcuda cannot be loaded by that name, CuPy answers."""
    try:
        if importlib.util.find_spec("cupy") is None:
            return 0
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError:
            import cupy

            return cupy.cuda.runtime.getDeviceCount()
        n = ctypes.c_int(0)
        if lib.cuInit(0) != 0 or lib.cuDeviceGetCount(ctypes.byref(n)) != 0:
            return 0
        return n.value
    except Exception:
        return 0


def retain_primary_context(gpu: int) -> bool:
    """Create GPU gpu's primary CUDA context (the one CuPy's runtime then uses) through the driver. ctypes
    releases the GIL during the call, so minimap2's threads keep mapping while the context is made (about
    0.5 s with 32 hardware queues; CuPy's first call would hold the GIL that long). False where libcuda
    cannot be loaded by that name or the driver says no: CuPy then makes the context and reports any error."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        dev, ctx = ctypes.c_int(0), ctypes.c_void_p()
        return (lib.cuInit(0) == 0 and lib.cuDeviceGet(ctypes.byref(dev), gpu) == 0
                and lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0)
    except Exception:
        return False


def pick(name: str, gpu: int = 0) -> str:
    """The backend that --backend NAME means here: auto is cuda when the driver sees a GPU (and CuPy is
    installed), else cpu; other names stay. Raises ValueError, saying why, when cuda cannot use GPU gpu. Asks
    the driver only (no CuPy, no NumPy: about 0.1 s), so that `gpuext map` can say a bad choice before minimap2
    starts and build the backend itself while minimap2 builds its index."""
    if name not in ("auto", "cuda"):
        return name
    n = device_count()
    if name == "auto":
        name = "cuda" if n > 0 else "cpu"
    if name == "cuda":
        if n == 0:
            raise ValueError("--backend cuda: CuPy or an NVIDIA GPU is missing (install gpuext[gpu])")
        if not 0 <= gpu < n:
            raise ValueError(f"--backend cuda: GPU {gpu} cannot be used: no such GPU (the driver sees {n})")
    return name


def available() -> bool:
    """True when CuPy is installed and the driver sees at least one CUDA device; never raises."""
    return device_count() > 0
