"""The cuda backend: ksw2 extension kernels on an NVIDIA GPU through CuPy (imported lazily).

Kernels live in kernels/*.cu, are built by loader.py and launched by one same-stem module each
(ksw_extd2.py for minimap2's ksw_extd2_sse). Importing this package never imports CuPy; it asks the
driver for 32 hardware queues (CUDA_DEVICE_MAX_CONNECTIONS, unless set) for the context to come.
"""
from __future__ import annotations

import os

# Each launch class of ksw_extd2.py runs on a stream of its own. With the driver's default of 8 hardware
# queues, streams share them, and a class queued behind the pass pipeline's thousands of blocks starts
# only once they have all been dispatched: in about a third of the processes, real E. coli took
# 0.019-0.021 s instead of 0.016-0.017 s (performance.md, sixteenth session). 32 queues, the most, cost
# about 0.3 s more when the process creates its CUDA context, which is when the driver reads this. A value
# the user set wins.
os.environ.setdefault("CUDA_DEVICE_MAX_CONNECTIONS", "32")


def available() -> bool:
    """True when CuPy imports and sees at least one CUDA device; never raises."""
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False
