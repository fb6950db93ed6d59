"""Builds a CUDA kernel file into the CPU emulator: one shared library with a launch wrapper per kernel.

Used by tests/emu/fakecupy (its RawModule); shim.h stands in for CUDA and emu.cpp runs the threads.
The source is compiled as C++ with -DGX_EMU (a kernel file with inline PTX keeps it under
#ifndef GX_EMU and gives a plain C++ branch for the emulator). The one rewrite of the source: a
dynamic shared memory declaration `extern __shared__ T name[];` becomes a reference to the
emulator's pointer to the launch's shared bytes (same line, so compiler messages keep their line
numbers). Every `extern "C" __global__` kernel, found in the macro-expanded source (so kernels stamped
out by macros count), gets a wrapper `int emu_<kernel>(unsigned grid, unsigned block, unsigned shared,
void **args)` that takes its arguments as CUDA's cuLaunchKernel does (an array of pointers to the
values) and returns 0, or 1 after an emulator error.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import re
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
# -fwrapv: signed overflow wraps, as on the GPU; -fno-strict-aliasing: device buffers are untyped
# bytes that the launcher and the kernels view as several types
CXXFLAGS = ["-O2", "-std=c++17", "-DGX_EMU", "-fwrapv", "-fno-strict-aliasing", "-shared", "-fPIC"]
KERNEL = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(?:__launch_bounds__\s*\([^()]*\)\s*)?'
                    r'(\w+)\s*\(([^()]*)\)\s*\{')
QUALIFIERS = {"const", "volatile", "__restrict__"}
DYN_SHARED = re.compile(r"extern\s+__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s*)?([\w\s]*?)\s*(\w+)\s*\[\s*\]\s*;")


def emulated_source(code: str) -> str:
    """code with its dynamic shared memory declarations as references to shim.h's emu_dyn_shared."""
    return DYN_SHARED.sub(lambda m: f"static {m[1]} *const &{m[2]} = reinterpret_cast<{m[1]} *&>(emu_dyn_shared);",
                          code)


def kernel_params(code: str) -> dict[str, list[tuple[str, str]]]:
    """Per kernel its parameters as (type, name), the type without qualifiers (e.g. "int *", "long long")."""
    flat = subprocess.run(["g++", "-E", "-P", "-x", "c++", "-DGX_EMU", "-"], input=code, capture_output=True,
                          text=True, check=True).stdout
    out = {}
    for m in KERNEL.finditer(flat):
        params = []
        for p in filter(None, (x.strip() for x in m.group(2).split(","))):
            t, name = re.fullmatch(r"(.*?)(\w+)", p).groups()
            params.append((" ".join(w for w in t.replace("*", " * ").split() if w not in QUALIFIERS), name))
        out[m.group(1)] = params
    if not out:
        raise ValueError('no extern "C" __global__ kernels in the source')
    return out


def _wrappers(params: dict[str, list[tuple[str, str]]]) -> str:
    lines = []
    for k, ps in params.items():
        args = ", ".join(f"*({t} *)a[{i}]" for i, (t, _) in enumerate(ps))
        lines.append(f'extern "C" int emu_{k}(unsigned grid, unsigned block, unsigned shared, void **a)\n'
                     f'{{ return emu_launch("{k}", grid, block, shared, [&] {{ {k}({args}); }}); }}')
    return "\n".join(lines) + "\n"


def build(code: str, out_dir) -> tuple[ctypes.CDLL, dict[str, list[tuple[str, str]]]]:
    """The emulator library of the kernel source `code` (built in out_dir, reused while the source and
    the emulator are unchanged) and kernel_params(code)."""
    params = kernel_params(code)
    h = hashlib.sha256(code.encode())
    for f in ("shim.h", "emu.cpp", "build.py"):
        h.update((HERE / f).read_bytes())
    out_dir = Path(out_dir)
    lib = out_dir / f"emu-{h.hexdigest()[:16]}.so"
    if not lib.exists():
        out_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
            src, main = Path(tmp, "kernel.cu"), Path(tmp, "main.cpp")
            src.write_text(emulated_source(code))
            main.write_text(f'#include "shim.h"\n#include "{src}"\n' + _wrappers(params))
            r = subprocess.run(["g++", *CXXFLAGS, f"-I{HERE}", "-o", f"{tmp}/emu.so", str(main), str(HERE / "emu.cpp")],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"g++ failed on the kernel source:\n{r.stderr[-4000:]}")
            os.replace(f"{tmp}/emu.so", lib)   # atomic: concurrent builds of one source do not collide
    dll = ctypes.CDLL(str(lib))
    dll.emu_last_error.restype = ctypes.c_char_p
    return dll, params


def run_harness(code: str, upto: str, harness: str, out_dir) -> subprocess.CompletedProcess:
    """Compiles the device functions of the kernel source `code` (the part before the line `upto`) with
    the C++ program `harness` appended, as a host program under shim.h, and runs it (its stdout, and
    its exit status: 0 when it found no difference). For CPU tests of single device functions."""
    out_dir = Path(out_dir)
    src, exe = out_dir / "harness.cpp", out_dir / "harness"
    src.write_text('#include "shim.h"\nunsigned g_tid, g_block, g_bdim, g_grid;\nchar *emu_dyn_shared;\n'
                   + emulated_source(code).split(upto)[0] + harness)
    cc = subprocess.run(["g++", "-O2", "-std=c++17", "-DGX_EMU", "-fwrapv", f"-I{HERE}", "-o", str(exe), str(src)],
                        capture_output=True, text=True)
    if cc.returncode != 0:
        raise RuntimeError(f"g++ failed on the harness:\n{cc.stderr[-3000:]}")
    return subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
