"""The cuda backend: ksw2 extension kernels on an NVIDIA GPU through CuPy (imported lazily).

Kernels live in kernels/*.cu, are built by loader.py and launched by one same-stem module each
(ksw_extd2.py for minimap2's ksw_extd2_sse). Importing this package never imports CuPy.
"""
from __future__ import annotations


def available() -> bool:
    """True when CuPy imports and sees at least one CUDA device; never raises."""
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False
