"""A numpy-backed stand-in for the CuPy that gpuext/backends/cuda uses (ksw_extend2.py, staging.py,
loader.py), so that the real launcher runs its kernels on the CPU emulator of tests/emu (build.py).

Only tests/emu/run_launcher.py imports it, in a process of its own with tests/emu/fakecupy first on
PYTHONPATH (other tests import the real CuPy or skip without it). Device memory is host memory: an
ndarray subclass whose .data.ptr is its address; `empty` fills with garbage, as the GPU leaves it.
Kernels run synchronously at launch, so streams and events only keep their interfaces and
runtime.memcpyAsync is a memmove. RawModule builds the emulator library for its source (cached by
the source's hash in $GPUEXT_EMU_DIR, default <tmp>/gpuext-emu); a kernel checks its arguments as the
GPU needs them (device arrays for pointers, numpy scalars of the parameter's exact type) and
raises RuntimeError on an emulator error (deadlock, bad mask, out-of-bounds __ldg).
"""
from __future__ import annotations

import ctypes
import os
import tempfile

import numpy as np

from tests.emu.build import build

emulated = True   # run_launcher.py checks that it got this module, not the real CuPy
GARBAGE = 0xA7    # the byte `empty` fills with
SCALARS = {"int": np.int32, "unsigned": np.uint32, "unsigned int": np.uint32, "long long": np.int64,
           "unsigned long long": np.uint64, "float": np.float32, "double": np.float64}


class _Pointer:
    def __init__(self, ptr: int):
        self.ptr = ptr


class ndarray(np.ndarray):
    """An array "on the device"."""

    @property
    def data(self) -> _Pointer:
        return _Pointer(self.ctypes.data)

    def sum(self, *args, **kwargs):   # a 0-d device array, as CuPy's
        return asarray(np.asarray(self).sum(*args, **kwargs))


def empty(shape, dtype=np.float64) -> ndarray:
    a = np.empty(shape, dtype)
    a.view(np.uint8).fill(GARBAGE)
    return a.view(ndarray)


def zeros(shape, dtype=np.float64) -> ndarray:
    return np.zeros(shape, dtype).view(ndarray)


def asarray(a, dtype=None) -> ndarray:
    return np.array(a, dtype).view(ndarray)


def asnumpy(a, stream=None) -> np.ndarray:
    return np.array(a)


class _Event:
    pass


class _Stream:
    _current: list = []

    def __init__(self, non_blocking: bool = False):
        self.ptr = id(self)

    def __enter__(self):
        _Stream._current.append(self)
        return self

    def __exit__(self, *exc):
        _Stream._current.pop()

    def record(self) -> _Event:
        return _Event()

    def wait_event(self, event: _Event) -> None:
        pass

    def synchronize(self) -> None:
        pass


_null_stream = _Stream()


class _Device:
    def __init__(self, device: int = 0):
        self.id = device


class _Runtime:
    @staticmethod
    def memGetInfo():
        return 32 << 30, 64 << 30   # free, total: a GPU with room for any test's jobs

    @staticmethod
    def setDevice(device: int) -> None:
        pass

    @staticmethod
    def memcpyAsync(dst: int, src: int, size: int, kind: int, stream: int) -> None:
        ctypes.memmove(dst, src, size)


class _Compiler:
    class CompileException(Exception):
        pass


class cuda:
    Device = _Device
    Stream = _Stream
    runtime = _Runtime
    compiler = _Compiler

    @staticmethod
    def alloc_pinned_memory(size: int) -> bytearray:
        return bytearray(size)

    @staticmethod
    def get_current_stream() -> _Stream:
        return _Stream._current[-1] if _Stream._current else _null_stream


class _Kernel:
    def __init__(self, lib, name: str, params: list[tuple[str, str]]):
        self.lib, self.fn, self.name, self.params = lib, getattr(lib, "emu_" + name), name, params

    def __call__(self, grid, block, args, shared_mem: int = 0) -> None:
        grid, block = (tuple(x) if isinstance(x, tuple) else (x,) for x in (grid, block))
        if any(x != 1 for x in grid[1:] + block[1:]) or shared_mem:
            raise NotImplementedError(f"{self.name}: the emulator runs 1-D launches without dynamic shared memory")
        if len(args) != len(self.params):
            raise TypeError(f"{self.name}: {len(args)} arguments for {len(self.params)} parameters")
        values, arrays = [], []
        for a, (t, name) in zip(args, self.params):
            if t.endswith("*"):
                if not isinstance(a, ndarray) or not a.flags.c_contiguous:
                    raise TypeError(f"{self.name}: {name} ({t}) needs a contiguous device array, got {type(a)}")
                values.append(np.array(a.ctypes.data, np.uintp))
                arrays.append(a)
            else:
                if not isinstance(a, np.generic) or a.dtype != SCALARS[t]:
                    raise TypeError(f"{self.name}: {name} ({t}) needs a numpy {np.dtype(SCALARS[t])}, got {a!r}")
                values.append(np.array(a))
        ptrs = np.array([a.ctypes.data for a in arrays], np.uintp)
        sizes = np.array([a.nbytes for a in arrays], np.uintp)
        self.lib.emu_set_regions(ptrs.ctypes.data_as(ctypes.c_void_p), sizes.ctypes.data_as(ctypes.c_void_p),
                                 ctypes.c_int(len(arrays)))
        argv = (ctypes.c_void_p * len(values))(*[v.ctypes.data for v in values])
        if self.fn(ctypes.c_uint(grid[0]), ctypes.c_uint(block[0]), argv):
            raise RuntimeError(self.lib.emu_last_error().decode())


class RawModule:
    def __init__(self, code: str, options=()):
        self.code, self.lib, self.params = code, None, {}

    def compile(self) -> None:
        if self.lib is None:
            out = os.environ.get("GPUEXT_EMU_DIR") or os.path.join(tempfile.gettempdir(), "gpuext-emu")
            try:
                self.lib, self.params = build(self.code, out)
            except RuntimeError as e:
                raise cuda.compiler.CompileException(str(e)) from None

    def get_function(self, name: str) -> _Kernel:
        self.compile()
        return _Kernel(self.lib, name, self.params[name])
