"""The one loader of gpuext's CUDA kernels: source from the package, explicit options, one build per device.

A kernel file is read verbatim through importlib.resources (so it works from an installed wheel),
prefixed with its configuration as `#define` lines and a `#line 1 "<file>"` directive (compiler
messages then point at the file's own lines), and built with cupy.RawModule under the options of
`compile_options()`, the only place where the target architecture is chosen. Modules are memoized
per (device, file, configuration).

Developer notes: CuPy caches compiled modules in $CUPY_CACHE_DIR (default ~/.cupy/kernel_cache);
set CUPY_DUMP_CUDA_SOURCE_ON_ERROR=1 to print the full source on a compile error.
CuPy is imported inside the functions only.
"""
from __future__ import annotations

import importlib.resources
import os
import sys
from typing import Any, Mapping

# The compile target, chosen here and nowhere else (Hopper: H100, H200). GPUEXT_CUDA_ARCH overrides.
GPU_ARCH = "sm_90"
CXX_STD = "-std=c++17"

_modules: dict[tuple, Any] = {}


def compile_options() -> tuple[str, ...]:
    """NVRTC options for every gpuext kernel."""
    return (CXX_STD, f"--gpu-architecture={os.environ.get('GPUEXT_CUDA_ARCH', GPU_ARCH)}")


def kernel_source(name: str, defines: Mapping[str, object] | None = None) -> str:
    """The text of kernels/<name> with its configuration and a #line directive in front."""
    src = importlib.resources.files(__package__).joinpath("kernels", name).read_text(encoding="utf-8")
    head = "".join(f"#define {k} {v}\n" for k, v in sorted((defines or {}).items()))
    return f'{head}#line 1 "{name}"\n{src}'


def load_module(name: str, defines: Mapping[str, object] | None = None):
    """cupy.RawModule for kernels/<name> on the current device, built once per configuration."""
    import cupy

    key = (cupy.cuda.Device().id, name, tuple(sorted((defines or {}).items())))
    mod = _modules.get(key)
    if mod is None:
        mod = _modules[key] = _build(kernel_source(name, defines))
    return mod


def _build(code: str):
    import cupy

    opts = compile_options()
    try:
        mod = cupy.RawModule(code=code, options=opts)
        mod.compile()
        return mod
    except cupy.cuda.compiler.CompileException as exc:
        # CuPy appends its own -arch for the current device; an NVRTC that refuses a second
        # architecture option gets CuPy's alone (the same sm_XX on the device it runs on)
        if "arch" not in str(exc):
            raise
        print(f"[W::gpuext] NVRTC refused {opts[1]!r} next to CuPy's own -arch; using the device's",
              file=sys.stderr)
        mod = cupy.RawModule(code=code, options=opts[:1])
        mod.compile()
        return mod
