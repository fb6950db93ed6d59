"""staging.is_pinned: which host arrays the launchers send from where they are (no GPU needed: the
allocations are recorded by _register, which the page-locked allocators call)."""
import gc

import numpy as np

from gpuext.backends.cuda import staging


def test_is_pinned_finds_the_allocation_holding_the_bytes():
    rng = np.random.default_rng(5)
    blocks = [np.zeros(int(n), np.uint8) for n in rng.integers(16, 5000, 60)]
    for b in blocks:
        staging._register(b, b.nbytes)
    for b in blocks:
        n = len(b)
        assert staging.is_pinned(b)
        assert staging.is_pinned(b[n // 2:])             # views inside it
        assert staging.is_pinned(b[n // 3:n // 2 + 1])
        assert not staging.is_pinned(b[::2])             # not contiguous
    assert not staging.is_pinned(np.zeros(100, np.uint8))   # an allocation never recorded
    x = np.zeros(2000, np.uint8)
    staging._register(x, 1000)   # only its first 1,000 bytes
    assert staging.is_pinned(x[:1000]) and staging.is_pinned(x[999:1000])
    assert not staging.is_pinned(x[500:1500])            # runs past the recorded end
    assert not staging.is_pinned(x[1000:])               # starts past it


def test_is_pinned_forgets_freed_allocations():
    a = np.zeros(4096, np.uint8)
    staging._register(a, a.nbytes)
    start = a.ctypes.data
    assert staging.is_pinned(a) and start in staging._regions
    del a
    gc.collect()
    assert start not in staging._regions


def _fake_cupy(monkeypatch):
    """tests/emu's numpy-backed CuPy as `cupy` for this test only, and an empty staging pool."""
    import importlib.util
    import pathlib
    import sys

    path = pathlib.Path(__file__).parents[1] / "emu" / "fakecupy" / "cupy" / "__init__.py"
    spec = importlib.util.spec_from_file_location("cupy", path)
    fake = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fake)
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(staging, "_idle", {})
    monkeypatch.setattr(staging, "_leased", {})
    monkeypatch.setattr(staging, "_growing", set())
    monkeypatch.setattr(staging, "_wanted", {})
    return fake


def _join_growth():
    import threading

    for t in threading.enumerate():
        if t.name == "gpuext-pin":
            t.join()


def _sent(st, arrays):
    """Send every array of Staging st by the copy threads; True when the device buffer then holds them."""
    for i in range(len(arrays)):
        st.send(i)
    st.ready()
    return all((np.asarray(st.view(i, np.uint8)) == a).all() for i, a in enumerate(arrays))


def test_staging_buffers_are_shared_by_the_calling_threads(monkeypatch):
    """minimap2's pipeline calls the backend from a different thread per batch: a buffer one thread gave back
    is the next thread's; with none idle that fits, the bytes go up from ordinary memory, and once the call has
    released its buffers, one of that size class is made for the calls after."""
    import threading

    fake = _fake_cupy(monkeypatch)
    rng = np.random.default_rng(9)
    arrays = [rng.integers(0, 255, n, dtype=np.uint8) for n in (3 << 20, 1000, (1 << 20) + 7)]
    stream = fake.cuda.Stream()
    first = staging.Staging(arrays, stream)
    assert first.buf is None                       # nothing idle yet: sent from where they are
    assert _sent(first, arrays)
    _join_growth()
    assert staging._idle.get(0, []) == []          # nothing made while the call runs
    staging.release()
    _join_growth()
    (made,) = staging._idle[0]
    assert made.size == 8 << 20                    # the size class of the 4.1 MB laid out
    second = staging.Staging(arrays, stream)       # this thread leases it
    assert second.buf is made and staging._idle[0] == []
    assert _sent(second, arrays)
    other = []
    t = threading.Thread(target=lambda: (other.append(staging.Staging(arrays, stream).buf), staging.release()))
    t.start(), t.join()
    assert other == [None]                         # held by this thread until it releases
    _join_growth()
    staging.release()
    assert len(staging._idle[0]) == 2 and any(b is made for b in staging._idle[0])
    staging._grow(0, 1 << 20)                      # idle: 8, 8 and 1 MB
    small = []
    t = threading.Thread(target=lambda: (small.append(staging.Staging(arrays[1:2], stream).buf), staging.release()))
    t.start(), t.join()
    assert small[0] is not None and small[0].size == 1 << 20   # the smallest idle one that fits, not the first
    assert sorted(b.size >> 20 for b in staging._idle[0]) == [1, 8, 8]
    staging.release()                              # (nothing leased by this thread now: no change)
    assert len(staging._idle[0]) == 3 and not staging._leased and not staging._wanted
