"""Runs the real ksw_extend2 launcher (gpuext/backends/cuda/ksw_extend2.py) on the CPU emulator and
compares every output with BWA's own ksw_extend2 (gpuext._native.bwa); prints the mismatches and exits
1 on any.

    PYTHONPATH=tests/emu/fakecupy:. python3 -m tests.emu.run_launcher --fuzz 300 --seed 11 --mode warp

Started by tests/kernel/test_ksw_extend2_emulated.py in a process of its own, so that the fake CuPy
(tests/emu/fakecupy) replaces the real one here only. Jobs: fuzzed (gpuext.bwa.fuzz, as
tests/kernel/test_ksw_extend2.py) or those of a seed dump; the jobs supports() rejects are dropped.
--big-h0 adds 65536 to every h0, so that no job gets the ring kernels' packed row maximum (the plan
packs only when h0 + (qlen + 1) * the matrix maximum < 65535) and the unpacked one is tested.
--pin puts the jobs in page-locked memory (gpu.pin: the launcher's DMAs straight from the jobs' arrays).
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--fuzz", type=int, metavar="N", help="N fuzzed jobs")
    src.add_argument("--dump", metavar="PATH", help="a seed dump of the patched bwa")
    ap.add_argument("--seed", type=int, default=1, help="the fuzz seed")
    ap.add_argument("--mode", choices=("auto", "warp", "thread"), default="auto")
    ap.add_argument("--big-h0", action="store_true", help="h0 + 65536: the unpacked row-max path")
    ap.add_argument("--chunk-bytes", type=int, help="the launcher's CHUNK_BYTES (small: many upload chunks)")
    ap.add_argument("--pin", action="store_true", help="jobs in page-locked memory (no staging copy)")
    ap.add_argument("--gpu-mem", type=int, help="the memory budget (small: the thread kernel's arena in pieces)")
    a = ap.parse_args()

    import cupy

    if not getattr(cupy, "emulated", False):
        sys.exit(f"run_launcher.py: got the real CuPy ({cupy.__file__}); put tests/emu/fakecupy first on PYTHONPATH")
    from gpuext._native import bwa
    from gpuext.backends.cuda import ksw_extend2 as gpu
    from gpuext.bwa.dump import read_dump
    from gpuext.bwa.fuzz import random_jobs

    if a.fuzz is not None:
        jobs = random_jobs(np.random.default_rng(a.seed), a.fuzz)
    else:
        jobs = read_dump(a.dump)[1]
    if a.big_h0:
        jobs.h0 += 1 << 16
    if a.chunk_bytes:
        gpu.CHUNK_BYTES = a.chunk_bytes
    keep = np.flatnonzero(gpu.supports(jobs, a.gpu_mem) == 0)
    print(f"{jobs.n} jobs, {jobs.n - len(keep)} rejected by supports()")
    jobs = jobs.take(keep)
    if a.pin:
        jobs = gpu.pin(jobs)

    t = time.perf_counter()
    got = gpu.run(jobs, gpu_mem=a.gpu_mem, mode=a.mode)
    stats = gpu.last_stats
    print(f"mode {a.mode}: {stats['chunks']} chunks, classes {stats['classes']}, {stats['cells_total']} cells, "
          f"{time.perf_counter() - t:.1f} s")
    want = bwa.extend2(jobs, n_threads=2)
    bad = want.mismatches(got)
    for k in bad[:5]:
        print(f"job {k} (qlen {jobs.qlen()[k]}, tlen {jobs.tlen()[k]}, h0 {jobs.h0[k]}, w {jobs.w[k]}): "
              f"bwa {want.row(k)} vs emulated {got.row(k)}")
    cells = bwa.cells(jobs, n_threads=2)
    bad_cells = np.flatnonzero(stats["cells"] != cells)
    for k in bad_cells[:5]:
        print(f"job {k}: bwa {cells[k]} cells vs emulated {stats['cells'][k]}")
    print(f"{len(bad)} of {jobs.n} jobs differ, {len(bad_cells)} cell counts differ")
    if stats["direct"] != a.pin:
        print(f"sequences sent {'straight' if stats['direct'] else 'through the staging copy'} with --pin {a.pin}")
        return 1
    return 1 if len(bad) or len(bad_cells) else 0


if __name__ == "__main__":
    sys.exit(main())
