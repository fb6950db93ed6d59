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
