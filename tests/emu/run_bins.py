"""Runs the launcher's launch-order kernels (ksw_extd2_bins_count, _scan, _place of
gpuext/backends/cuda/kernels/ksw_extd2.cu) on the CPU emulator over random sort keys laid out as
ksw_extd2_class writes them (class << 40 | (2**40 - 1 - size), the middle team's long jobs with bit 39
of the size set, the upload wave above a size of 36 bits in the classes that run by waves), and checks
the order they give against the order an exact sort gives: a permutation; classes in order; in a class
of the middle team, the long jobs first; in a class that runs by waves, the first wave first; and sizes
(below 2**32 in those classes) never more than an eighth of an octave out of order. Prints what it found and exits 1 on any fault.

    PYTHONPATH=tests/emu/fakecupy:. python3 -m tests.emu.run_bins --jobs 5000 --seed 3

Started by tests/kernel/test_ksw_extd2_emulated.py in a process of its own (the fake CuPy).
"""
from __future__ import annotations

import argparse
import sys

import numpy as np


def keys(rng, m: int) -> np.ndarray:
    """m keys: classes 0..63 (63: jobs that do not run), sizes log-uniform over 1 .. 2**39 - 1 with
    runs of equal sizes, the long flag on a share of the middle team's (classes 10..19), and in the
    classes that run by upload waves a random wave and the size capped at 36 bits."""
    from gpuext.backends.cuda import ksw_extd2 as k

    cls = rng.integers(0, 64, m).astype(np.int64)
    size = np.exp2(rng.uniform(0, 39, m)).astype(np.int64).clip(0, (1 << 39) - 1)
    size[rng.random(m) < 0.2] = rng.integers(0, 3000, 1)[0]   # a run of equal sizes
    size[rng.random(m) < 0.05] = 0
    mid = (cls >= 10) & (cls < 20)
    long_ = mid & (rng.random(m) < 0.3)
    c = size | np.where(long_, 1 << 39, 0)
    wv = np.array([k._wave_class(int(x)) for x in cls])
    wave = rng.integers(0, k.MAX_WAVES, m)
    c = np.where(wv, ((k.MAX_WAVES - 1 - wave) << 36) | np.minimum(size, (1 << 36) - 1), c)
    return (cls << 40) | (((1 << 40) - 1) - c)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=3)
    a = ap.parse_args()

    import cupy

    from gpuext.backends.cuda import ksw_extd2 as k

    rng = np.random.default_rng(a.seed)
    key = keys(rng, a.jobs)
    mod = k._module()[0]
    d_key, d_bins, d_lst = cupy.asarray(key), cupy.zeros(k.KSW_NBINS, np.uint32), cupy.empty(a.jobs, np.int64)
    grid = ((a.jobs + 255) // 256,)
    k._fn(mod, "ksw_extd2_bins_count")(grid, (256,), (np.int32(a.jobs), d_key, d_bins))
    k._fn(mod, "ksw_extd2_bins_scan")((1,), (k.BINS_THREADS,), (d_bins,))
    k._fn(mod, "ksw_extd2_bins_place")(grid, (256,), (np.int32(a.jobs), d_key, d_bins, d_lst))
    lst = cupy.asnumpy(d_lst)
    faults = []
    if not np.array_equal(np.sort(lst), np.arange(a.jobs)):
        faults.append("not a permutation of the jobs")
    else:
        ks = key[lst]
        cls = ks >> 40
        c = ((1 << 40) - 1) - (ks & ((1 << 40) - 1))
        wv = np.array([k._wave_class(int(x)) for x in cls])
        # class, then the long jobs first, or the first wave first
        group = cls * 8 + np.where(wv, k.MAX_WAVES - 1 - (c >> 36 & 3), (c >> 39) == 0)
        size = np.where(wv, np.minimum(c & ((1 << 36) - 1), 1 << 32), c & ((1 << 39) - 1)) + 1
        if np.any(np.diff(group) < 0):
            faults.append("classes (or a middle-team class's long jobs) out of order")
        same = np.diff(group) == 0
        late = same & (size[1:] * 8 > size[:-1] * 9)   # a later job over 9/8 of the one before it
        if late.any():
            i = int(np.flatnonzero(late)[0])
            faults.append(f"sizes out of order: {size[i]} before {size[i + 1]} (position {i})")
        exact = np.argsort(key, kind="stable")
        ke = key[exact]
        ce = ((1 << 40) - 1) - (ke & ((1 << 40) - 1))
        we = np.array([k._wave_class(int(x)) for x in ke >> 40])
        if not np.array_equal(np.sort(group), group) or not np.array_equal(
                (ke >> 40) * 8 + np.where(we, k.MAX_WAVES - 1 - (ce >> 36 & 3), (ce >> 39) == 0), group):
            faults.append("the class sequence differs from an exact sort's")
    print(f"{a.jobs} keys (seed {a.seed}): " + ("; ".join(faults) if faults else "order ok"))
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main())
