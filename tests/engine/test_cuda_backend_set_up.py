"""The cuda backend sets the GPU up in a thread of its own (CuPy's import, the CUDA context, the kernels, a
first small call) while minimap2 builds its index and maps the first reads; its first run() waits for that
thread. Checked without a GPU: the driver's device count is given, CuPy is replaced by a stand-in with a
device, and the kernel launcher's set-up and the backend's GPU computation by recorders."""
import sys
import threading
import types

import numpy as np
import pytest

from gpuext.backends import CudaBackend, cpu
from gpuext.backends import cuda as cuda_pkg
from gpuext.backends.cuda import ksw_extd2


class _Device:
    def __init__(self, i):
        self.id = i
        self.compute_capability = "90"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.fixture
def no_gpu(monkeypatch):
    """One device; the backend's GPU computation records that it ran (and returns a marker)."""
    fake = types.ModuleType("cupy")
    fake.cuda = types.SimpleNamespace(Device=_Device)
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(cuda_pkg, "device_count", lambda: 1)
    events = []
    monkeypatch.setattr(CudaBackend, "_run", lambda self, batch: events.append(("run", self.gpu_mem)) or "results")
    monkeypatch.setattr(ksw_extd2, "default_gpu_mem", lambda: 123)
    return events


def test_first_run_waits_for_the_set_up_thread(no_gpu, monkeypatch):
    release = threading.Event()

    def warm_up():
        no_gpu.append(("warm-up starts", threading.current_thread().name))
        release.wait(10)
        no_gpu.append(("warm-up ends", None))

    monkeypatch.setattr(ksw_extd2, "warm_up", warm_up)
    be = CudaBackend(n_threads=1)                    # returns at once: the set-up runs in its thread
    done = []
    t = threading.Thread(target=lambda: done.append(be.run(None)))
    t.start()
    t.join(0.3)
    assert not done                                  # run() is waiting for the set-up
    release.set()
    t.join(10)
    assert done == ["results"]
    assert [e[0] for e in no_gpu] == ["warm-up starts", "warm-up ends", "run"]
    assert no_gpu[0][1] == "gpuext-cuda-warm-up" and no_gpu[-1] == ("run", 123)   # the GPU's default budget
    assert be.device.id == 0


def test_given_memory_budget_is_kept(no_gpu, monkeypatch):
    monkeypatch.setattr(ksw_extd2, "warm_up", lambda: None)
    monkeypatch.setattr(ksw_extd2, "default_gpu_mem", lambda: pytest.fail("the budget was given"))
    be = CudaBackend(n_threads=1, gpu_mem=5 << 30)
    assert be.run(None) == "results" and no_gpu == [("run", 5 << 30)]


def test_a_gpu_the_driver_does_not_see_fails_at_once(no_gpu, monkeypatch):
    monkeypatch.setattr(ksw_extd2, "warm_up", lambda: pytest.fail("no set-up for a GPU that does not exist"))
    with pytest.raises(ValueError, match="no such GPU"):
        CudaBackend(n_threads=1, gpu=1)


def _failing(monkeypatch, times=2):
    """The set-up fails its first `times` tries (the thread's, then ready()'s)."""
    tries = []

    def warm_up():
        tries.append(threading.current_thread().name)
        if len(tries) <= times:
            raise MemoryError("out of memory while loading the kernels")

    monkeypatch.setattr(ksw_extd2, "warm_up", warm_up)
    return tries


def test_set_up_failure_is_raised_by_run(no_gpu, monkeypatch, capsys):
    tries = _failing(monkeypatch)
    be = CudaBackend(n_threads=1)
    with pytest.raises(RuntimeError, match="GPU 0 set-up failed: out of memory while loading the kernels"):
        be.run(None)
    with pytest.raises(RuntimeError, match="GPU 0 set-up failed"):
        be.run(None)
    assert tries == ["gpuext-cuda-warm-up", "MainThread"]   # tried once more, in the thread that needed it
    assert not [e for e in no_gpu if e[0] == "run"]  # nothing ran on a GPU that failed to set up
    assert capsys.readouterr().err.count("set-up failed (out of memory while loading the kernels); trying again") == 1


def test_set_up_is_tried_once_more(no_gpu, monkeypatch):
    tries = _failing(monkeypatch, times=1)
    be = CudaBackend(n_threads=1)
    assert be.run(None) == "results" and be.run(None) == "results"
    assert tries == ["gpuext-cuda-warm-up", "MainThread"] and [e[0] for e in no_gpu] == ["run", "run"]


def test_auto_backend_computes_on_the_cpu_when_the_set_up_fails(no_gpu, monkeypatch, capsys):
    _failing(monkeypatch)
    be = CudaBackend(n_threads=2, cpu_if_set_up_fails=True)
    batch = ksw_extd2._warm_batch()
    buf = be.host_alloc(10, np.int32)                # ordinary memory: no pinned pool without a GPU
    assert buf.shape == (10,) and buf.dtype == np.int32
    got, fallback = be.run(batch)
    got2, _ = be.run(batch)
    assert not got.diff(cpu.run(batch, 2)) and not got2.diff(got)
    assert fallback == {"GPU set-up failed": [batch.n, int(batch.cells().sum())]}
    assert not [e for e in no_gpu if e[0] == "run"]
    err = capsys.readouterr().err
    assert err.count("[W::gpuext::backend] GPU 0 set-up failed again (out of memory while loading the kernels): the cpu "
                     "backend computes") == 1
