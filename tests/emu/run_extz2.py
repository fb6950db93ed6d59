"""Runs the real ksw_extz2 launcher (gpuext/backends/cuda/ksw_extz2.py) on the CPU emulator and compares
every result field and CIGAR with the stock ksw2 code (gpuext.backends.cpu); prints the differences and
exits 1 on any.

    PYTHONPATH=tests/emu/fakecupy:. python3 -m tests.emu.run_extz2 --batches 4 --jobs 40 --seed 11

Started by tests/kernel/test_ksw_extz2_emulated.py in a process of its own (the fake CuPy must not reach
the other tests). Jobs: extz2_jobs of tests/kernel/test_ksw_extz2.py (the GPU test's generator), a batch
each with its own gap cost and matrix. --chunked runs a shuffled subset under a budget of one job at a
time (many chunks); --live draws no matrix that makes ksw2 return at once; --wide adds jobs of bands over 2048 wide; --gap fixes the gap cost; --expect-threads names a block
size that must run (ksw_extz2.THREADS, by the band's width). GX_EMU_REVERSE=1 makes the emulator run a block's threads in reverse order.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np


def wide_jobs(rng, b, n: int):
    """n jobs with bands over 2048 wide (blocks of 512 threads): 2.1-3.5 kb targets, ONT-like copies as
    queries, no band, the batch's scoring, Z-drop off or on, the flags minimap2 passes."""
    from gpuext.engine.jobs import KERNEL_EXTZ2, KSW_EZ_GENERIC_SC, JobBatch
    from tests.kernel.test_ksw_extd2 import FLAG_SETS, _mutate

    ts = [rng.integers(0, 4, int(rng.integers(2100, 3500))).astype(np.uint8) for _ in range(n)]
    qs = [_mutate(rng, t, 0.1, 0.001) for t in ts]
    flag = rng.choice(FLAG_SETS, n).astype(np.int32) | (b.flag[:1] & KSW_EZ_GENERIC_SC)
    return JobBatch.of(b.scoring, qs, ts, KERNEL_EXTZ2, -1, rng.choice([-1, 100, 400], n), rng.choice([-1, 0, 10], n),
                       flag)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=int, default=4)
    ap.add_argument("--jobs", type=int, default=40, help="random jobs per batch")
    ap.add_argument("--max-len", type=int, default=1500)
    ap.add_argument("--cells", type=float, default=2e6, help="the generator's cell budget per batch (past it, short jobs only)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--chunked", action="store_true", help="a shuffled subset, one job per chunk")
    ap.add_argument("--live", action="store_true", help="matrices whose mismatches ksw2 sees (no early return)")
    ap.add_argument("--expect-threads", type=int, help="a block size (THREADS) that must have run")
    ap.add_argument("--wide", type=int, default=0, metavar="N", help="N more jobs per batch with bands over 2048 wide")
    ap.add_argument("--gap", help="Q,E: this one gap cost in every batch (default: drawn from GAPS)")
    a = ap.parse_args()

    import cupy

    if not getattr(cupy, "emulated", False):
        sys.exit(f"run_extz2.py: got the real CuPy ({cupy.__file__}); put tests/emu/fakecupy first on PYTHONPATH")
    from gpuext.backends import cpu
    from gpuext.backends.cuda import ksw_extz2 as gpu
    from gpuext.engine.jobs import JobBatch
    from tests.kernel.test_ksw_extd2 import describe_diff
    from tests.kernel.test_ksw_extz2 import extz2_jobs

    print(f"seed {a.seed}")
    bad, seen = 0, set()
    for bi in range(a.batches):
        rng = np.random.default_rng([a.seed, bi])
        b = extz2_jobs(rng, a.jobs, max_len=a.max_len, cell_budget=a.cells, live=a.live,
                       gap=tuple(int(x) for x in a.gap.split(",")) if a.gap else None)
        if a.wide:
            b = JobBatch.concat([b, wide_jobs(rng, b, a.wide)])
        assert (gpu.supports(b) == 0).all()
        idx, budget = None, None
        if a.chunked:
            idx = rng.permutation(b.n)[: b.n * 3 // 4]
            state, dirb, cig, _ = gpu._job_bytes(b.qlen(), b.tlen(), b.w, b.flag)
            budget = int((state + dirb + 4 * cig).max())
        want = cpu.run(b, n_threads=2)
        got = gpu.run(b, idx, gpu_mem=budget)
        if idx is not None:
            want, b = want.take(idx), b.subset(idx)
        d = want.diff(got)
        seen.update(gpu.last_stats.get("blocks", {}))
        s = b.scoring
        print(f"batch {bi}: {b.n} jobs, q {s.q} e {s.e}, {int(b.cells().sum())} cells, "
              f"{gpu.last_stats['chunks']} chunks: {len(d)} differences")
        if d:
            print(describe_diff(b, want, got))
        if a.chunked and gpu.last_stats["chunks"] == 1:   # (0: the matrix made every job return at once)
            print(f"batch {bi}: one chunk under a one-job budget")
            bad += 1
        bad += len(d)
    print(f"block sizes run: {sorted(seen)}")
    if a.expect_threads and a.expect_threads not in seen:
        print(f"no block of {a.expect_threads} threads ran")
        bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
