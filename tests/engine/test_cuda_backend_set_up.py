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
from gpuext.backends.cuda import ksw_extd2, ksw_extz2


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
    monkeypatch.setattr(cuda_pkg, "retain_primary_context", lambda gpu: True)   # (no real context on a GPU host)
    events = []
    monkeypatch.setattr(CudaBackend, "_run", lambda self, batch: events.append(("run", self.gpu_mem)) or "results")
    monkeypatch.setattr(ksw_extd2, "default_gpu_mem", lambda: 123)
    monkeypatch.setattr(ksw_extz2, "warm_up", lambda: events.append(("extz2 warm-up", None)))
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
    assert [e[0] for e in no_gpu] == ["warm-up starts", "warm-up ends", "extz2 warm-up", "run"]
    assert no_gpu[0][1] == "gpuext-cuda-warm-up" and no_gpu[-1] == ("run", 123)   # the GPU's default budget
    assert be.device.id == 0


def test_given_memory_budget_is_kept(no_gpu, monkeypatch):
    monkeypatch.setattr(ksw_extd2, "warm_up", lambda: None)
    monkeypatch.setattr(ksw_extd2, "default_gpu_mem", lambda: pytest.fail("the budget was given"))
    be = CudaBackend(n_threads=1, gpu_mem=5 << 30)
    assert be.run(None) == "results" and no_gpu[-1] == ("run", 5 << 30)


def test_a_gpu_the_driver_does_not_see_fails_at_once(no_gpu, monkeypatch):
    monkeypatch.setattr(ksw_extd2, "warm_up", lambda: pytest.fail("no set-up for a GPU that does not exist"))
    with pytest.raises(ValueError, match="no such GPU"):
        CudaBackend(n_threads=1, gpu=1)


def _failing(monkeypatch, times=2, retry_gate=None):
    """The set-up fails its first `times` tries (the thread's, then ready()'s, which waits for retry_gate)."""
    tries = []

    def warm_up():
        tries.append(threading.current_thread().name)
        if len(tries) == 2 and retry_gate is not None:
            retry_gate.wait(10)
        if len(tries) <= times:
            raise MemoryError("out of memory while loading the kernels")

    monkeypatch.setattr(ksw_extd2, "warm_up", warm_up)
    return tries


def _runs(events):
    return [e for e in events if e[0] == "run"]


def test_set_up_failure_is_raised_by_run(no_gpu, monkeypatch, capsys):
    tries = _failing(monkeypatch)
    be = CudaBackend(n_threads=1)
    why = "MemoryError: out of memory while loading the kernels"
    with pytest.raises(RuntimeError, match=f"GPU 0 set-up failed: {why}"):
        be.run(None)
    with pytest.raises(RuntimeError, match="GPU 0 set-up failed"):
        be.run(None)
    assert tries == ["gpuext-cuda-warm-up", "MainThread"]   # tried once more, in the thread that needed it
    assert not _runs(no_gpu)                         # nothing ran on a GPU that failed to set up
    assert capsys.readouterr().err.count(f"[W::gpuext::backend] GPU 0 set-up failed ({why})") == 1   # at once


def test_set_up_is_tried_once_more(no_gpu, monkeypatch):
    tries = _failing(monkeypatch, times=1)
    be = CudaBackend(n_threads=1)
    assert be.run(None) == "results" and be.run(None) == "results"
    assert tries == ["gpuext-cuda-warm-up", "MainThread"] and len(_runs(no_gpu)) == 2


def test_threads_wait_for_the_retry(no_gpu, monkeypatch):
    """A thread that needs the GPU while another retries its set-up waits for that retry's outcome."""
    gate = threading.Event()
    tries = _failing(monkeypatch, retry_gate=gate)
    be = CudaBackend(n_threads=1)
    be._warm.join()
    out = {}

    def use(key, f):
        try:
            out[key] = f()
        except RuntimeError as e:
            out[key] = e

    a = threading.Thread(target=use, args=("a", lambda: be.run(None)))
    a.start()
    for _ in range(1000):                            # a is in its retry, which waits at the gate
        if len(tries) >= 2:
            break
        threading.Event().wait(0.01)
    assert len(tries) == 2
    monkeypatch.setenv("GPUEXT_PINNED_JOBS", "1")      # (host_alloc asks for page-locked memory: a GPU then)
    b = threading.Thread(target=use, args=("b", lambda: be.host_alloc(4, np.int32)))
    b.start()
    b.join(0.3)
    assert "b" not in out                            # b waits for a's retry
    gate.set()
    a.join(10), b.join(10)
    assert isinstance(out["a"], RuntimeError) and isinstance(out["b"], RuntimeError)
    assert len(tries) == 2 and not _runs(no_gpu)


def test_close_stops_the_set_up(no_gpu, monkeypatch):
    """A run that ends without a batch (close()) leaves the kernels alone."""
    gate = threading.Event()
    monkeypatch.setattr(ksw_extd2, "default_gpu_mem", lambda: gate.wait(10) and 123)
    monkeypatch.setattr(ksw_extd2, "warm_up", lambda: pytest.fail("set-up went on after close()"))
    be = CudaBackend(n_threads=1)
    be.close()
    gate.set()
    be._warm.join(10)
    assert not be._warm.is_alive() and be.device is None and not no_gpu
    with pytest.raises(RuntimeError, match="the cuda backend was closed"):
        be.run(None)


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
    assert not _runs(no_gpu)
    err = capsys.readouterr().err
    assert err.count("[W::gpuext::backend] GPU 0 set-up failed (MemoryError: out of memory while loading the kernels)") == 1
    assert err.count("set-up failed again (MemoryError: out of memory while loading the kernels): the cpu backend "
                     "computes") == 1


def test_run_routes_each_job_and_merges_the_cpu_fallback(monkeypatch):
    """CudaBackend._run (what run() does once the GPU is set up), with both kernels' launchers replaced by the
    stock code: extd2 jobs go to ksw_extd2, extz2 jobs to ksw_extz2, jobs a launcher does not support to the cpu
    backend (counted per reason), and the results come back in the batch's order, equal to the cpu backend's."""
    from gpuext.engine.jobs import KERNEL_EXTD2, KERNEL_EXTZ2, JobBatch

    base = ksw_extd2._warm_batch()
    qs = [base.qseq[base.qoff[i]:base.qoff[i + 1]] for i in range(base.n)] * 4
    ts = [base.tseq[base.toff[i]:base.toff[i + 1]] for i in range(base.n)] * 4
    n = len(qs)
    kernel = np.where(np.arange(n) % 4 == 1, KERNEL_EXTZ2, KERNEL_EXTD2).astype(np.int8)
    batch = JobBatch.of(base.scoring, qs, ts, kernel, np.tile(base.w, 4), 400, -1,
                        np.where(kernel == KERNEL_EXTZ2, 0, np.tile(base.flag, 4)))
    calls = []

    def launcher(mod, name, rejected):
        def supports(b, gpu_mem):
            codes = np.zeros(b.n, np.int32)
            codes[rejected] = ksw_extd2.REJECT_MEMORY
            return codes

        def run(b, idx, gpu_mem):
            calls.append((name, None if idx is None else list(idx)))
            return cpu.run(b if idx is None else b.subset(np.asarray(idx)), 1)

        monkeypatch.setattr(mod, "supports", supports)
        monkeypatch.setattr(mod, "run", run)

    launcher(ksw_extd2, "extd2", [2, 6])
    launcher(ksw_extz2, "extz2", [5])
    be = object.__new__(CudaBackend)
    be.kernel, be.kernel_z2, be.cpu, be.gpu_mem = ksw_extd2, ksw_extz2, cpu_backend(), 1 << 30
    got, fallback = be._run(batch)
    ext = np.flatnonzero(kernel == KERNEL_EXTD2)
    assert calls == [("extd2", [i for i in ext if i not in (2, 6)]), ("extz2", [1, 9])]
    assert not got.diff(cpu.run(batch, 1))
    cells = batch.cells()
    assert fallback == {ksw_extd2.REASONS[ksw_extd2.REJECT_MEMORY]: [3, int(cells[[2, 5, 6]].sum())]}


def cpu_backend():
    from gpuext.backends import CpuBackend

    return CpuBackend(1)
