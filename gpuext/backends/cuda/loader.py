"""The one loader of gpuext's CUDA kernels: source from the package, explicit options, one build per device.

A kernel file is read verbatim through importlib.resources (so it works from an installed wheel),
prefixed with its configuration as `#define` lines and a `#line 1 "<file>"` directive (compiler
messages then point at the file's own lines), with the text of each header of kernels/ that it
includes (`#include "ksw2.cuh"`: the constants its kernels share) in place of that line, and built with cupy.RawModule under the options of
`compile_options()`, the only place where the target architecture is chosen. Modules are memoized
per (device, file, configuration).

Developer notes: CuPy caches compiled modules in $CUPY_CACHE_DIR (default ~/.cupy/kernel_cache);
set CUPY_DUMP_CUDA_SOURCE_ON_ERROR=1 to print the full source on a compile error.
CuPy is imported inside the functions only.
"""
from __future__ import annotations

import importlib.resources
import os
import re
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
    """The text of kernels/<name> with its configuration and a #line directive in front, and the text
    of each kernels/ header it includes (#include "x.cuh") in place of that line (so NVRTC, nvcc and the
    tests' CPU emulator need no include path)."""
    head = "".join(f"#define {k} {v}\n" for k, v in sorted((defines or {}).items()))
    return head + _inlined(name)


def _inlined(name: str) -> str:
    """kernels/<name> with its #include "<kernels/ header>" lines replaced by the headers' text, under
    #line directives that keep compiler messages pointing at each file's own lines."""
    kernels = importlib.resources.files(__package__).joinpath("kernels")
    out = [f'#line 1 "{name}"\n']
    for i, line in enumerate(kernels.joinpath(name).read_text(encoding="utf-8").splitlines(keepends=True), 1):
        m = re.match(r'\s*#\s*include\s+"([\w.]+\.cuh)"', line)
        if m and kernels.joinpath(m.group(1)).is_file():
            out += [_inlined(m.group(1)), f'\n#line {i + 1} "{name}"\n']
        else:
            out.append(line)
    return "".join(out)


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
