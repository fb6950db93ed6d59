"""A numpy-backed stand-in for the CuPy that gpuext/backends/cuda uses (ksw_extend2.py, ksw_extd2.py,
staging.py, loader.py), so that the real launchers run their kernels on the CPU emulator of tests/emu
(build.py).

Only the drivers tests/emu/run_launcher.py and run_extd2.py import it, each in a process of its own
with tests/emu/fakecupy first on PYTHONPATH (other tests import the real CuPy or skip without it).
Device memory is host memory: an ndarray subclass whose .data.ptr is its address. `empty`, `zeros`,
`asarray` and the array functions allocate it in mappings of their own that end, at the allocation
rounded up to 256 bytes (a memory pool's granularity), at an inaccessible page: a kernel access past
an allocation faults, and emu.cpp names the kernel and thread. `empty` fills with garbage, as the
GPU leaves it. Kernels run synchronously at launch, so streams and events only keep their
interfaces (elapsed times are 0) and runtime.memcpyAsync is a memmove. RawModule builds the emulator
library for its source (cached by the source's hash in $GPUEXT_EMU_DIR, default <tmp>/gpuext-emu); a
kernel checks its arguments as the GPU needs them (device arrays for pointers, numpy scalars of the
parameter's exact type), refuses more than 48 KiB of dynamic shared memory unless its
max_dynamic_shared_size_bytes allows it (as CUDA does) and raises RuntimeError on an emulator error
(deadlock, bad mask, out-of-bounds __ldg).
"""
from __future__ import annotations

import ctypes
import mmap
import os
import tempfile

import numpy as np

from tests.emu.build import build

emulated = True   # the drivers check that they got this module, not the real CuPy
GARBAGE = 0xA7    # the byte `empty` fills with
STATIC_SHARED_MAX = 48 << 10   # dynamic shared memory a kernel gets without raising its attribute
launched: dict = {}   # launches per kernel name, for the drivers' coverage checks
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

    def get(self, stream=None, out=None, blocking=True) -> np.ndarray:
        if out is None:
            return np.array(self)
        out[...] = self
        return out


_mprotect = ctypes.CDLL(None, use_errno=True).mprotect
_mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)


def _device_bytes(nbytes: int) -> np.ndarray:
    """nbytes (uint8) that end, rounded up to 256 bytes, at an inaccessible page (freed with the array)."""
    size = -(-max(nbytes, 1) // 256) * 256
    span = -(-size // mmap.PAGESIZE) * mmap.PAGESIZE
    m = np.frombuffer(mmap.mmap(-1, span + mmap.PAGESIZE), np.uint8)
    if _mprotect(m.ctypes.data + span, mmap.PAGESIZE, 0):   # PROT_NONE
        raise OSError(ctypes.get_errno(), "mprotect")
    return m[span - size:span - size + nbytes]


def _device(a: np.ndarray) -> ndarray:
    """A device copy of the host array a."""
    out = _device_bytes(a.nbytes).view(a.dtype).reshape(a.shape).view(ndarray)
    out[...] = a
    return out


def empty(shape, dtype=np.float64) -> ndarray:
    dtype = np.dtype(dtype)
    b = _device_bytes(int(np.prod(shape)) * dtype.itemsize)
    b.fill(GARBAGE)
    return b.view(dtype).reshape(shape).view(ndarray)


def zeros(shape, dtype=np.float64) -> ndarray:
    return _device(np.zeros(shape, dtype))


def asarray(a, dtype=None) -> ndarray:
    return _device(np.asarray(a, dtype))


def asnumpy(a, stream=None) -> np.ndarray:
    return np.array(a)


def ascontiguousarray(a) -> ndarray:
    return _device(np.ascontiguousarray(a))


def argsort(a) -> ndarray:
    return _device(np.argsort(np.asarray(a), kind="stable"))


def cumsum(a, dtype=None, out=None) -> ndarray:
    if out is not None:
        np.cumsum(np.asarray(a), dtype=dtype, out=out)
        return out
    return _device(np.cumsum(np.asarray(a), dtype=dtype))


def concatenate(arrays) -> ndarray:
    return _device(np.concatenate([np.asarray(a) for a in arrays]))


class _Event:
    pass


class _Stream:
    _current: list = []

    def __init__(self, non_blocking: bool = False, priority: int = 0):
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
        self.attributes = {"MultiProcessorCount": 132}   # an H100's (the launcher sizes some launches by it)

    def synchronize(self) -> None:   # (every launch and copy here is done when its call returns)
        pass


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
    def get_elapsed_time(start: _Event, end: _Event) -> float:
        return 0.0

    @staticmethod
    def alloc_pinned_memory(size: int) -> bytearray:
        return bytearray(size)

    class PinnedMemory:
        def __init__(self, size: int, flags: int = 0):
            self.buf = bytearray(size)

    @staticmethod
    def PinnedMemoryPointer(mem, offset: int) -> memoryview:
        return memoryview(mem.buf)[offset:]

    @staticmethod
    def get_current_stream() -> _Stream:
        return _Stream._current[-1] if _Stream._current else _null_stream


class _Kernel:
    def __init__(self, lib, name: str, params: list[tuple[str, str]]):
        self.lib, self.fn, self.name, self.params = lib, getattr(lib, "emu_" + name), name, params
        self.max_dynamic_shared_size_bytes = STATIC_SHARED_MAX

    def __call__(self, grid, block, args, shared_mem: int = 0) -> None:
        grid, block = (tuple(x) if isinstance(x, tuple) else (x,) for x in (grid, block))
        if any(x != 1 for x in grid[1:] + block[1:]):
            raise NotImplementedError(f"{self.name}: the emulator runs 1-D launches")
        if shared_mem > self.max_dynamic_shared_size_bytes:
            raise RuntimeError(f"{self.name}: {shared_mem} bytes of dynamic shared memory, the function allows "
                               f"{self.max_dynamic_shared_size_bytes}")
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
        launched[self.name] = launched.get(self.name, 0) + 1
        if self.fn(ctypes.c_uint(grid[0]), ctypes.c_uint(block[0]), ctypes.c_uint(shared_mem), argv):
            raise RuntimeError(self.lib.emu_last_error().decode())


class RawModule:
    def __init__(self, code: str, options=()):
        self.code, self.lib, self.params, self.kernels = code, None, {}, {}

    def compile(self) -> None:
        if self.lib is None:
            out = os.environ.get("GPUEXT_EMU_DIR") or os.path.join(tempfile.gettempdir(), "gpuext-emu")
            try:
                self.lib, self.params = build(self.code, out)
            except RuntimeError as e:
                raise cuda.compiler.CompileException(str(e)) from None

    def get_function(self, name: str) -> _Kernel:
        """The kernel; one object per name, as its attributes belong to the module's function."""
        self.compile()
        if name not in self.kernels:
            self.kernels[name] = _Kernel(self.lib, name, self.params[name])
        return self.kernels[name]
