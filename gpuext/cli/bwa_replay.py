"""`gpuext bwa-replay DUMP`: recompute every ksw_extend2 call of a BWA seed dump and compare.

The dump comes from the patched bwa (`GPUEXT_BWA_DUMP=FILE bwa mem ...`, docs/bwa-seed-dump.md).
Each job is recomputed by the chosen backend: `cpu` runs BWA's own ksw_extend2 (gpuext._native.bwa)
on -t threads; `cuda` runs kernels/ksw_extend2.cu and sends the jobs its supports() rejects to the
CPU, counted per reason. All six outputs (score, qle, tle, gtle, gscore, max_off) must equal BWA's;
the first mismatches are printed in detail, and the exit status is 1 if there is any (2 for a bad
dump or option). Neighbours: gpuext/bwa/dump.py, gpuext/backends/cuda/ksw_extend2.py.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

from .. import log

FUNC = "bwa_replay"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gpuext bwa-replay",
                                description="Replay a BWA seed dump and check every output against BWA's.")
    p.add_argument("dump", help="seed dump written by the patched bwa (GPUEXT_BWA_DUMP=FILE)")
    p.add_argument("--backend", choices=("cuda", "cpu"), default="cuda",
                   help="cuda: the GPU kernel (rejected jobs on the CPU); cpu: BWA's ksw_extend2 [cuda]")
    p.add_argument("-t", "--threads", type=int, default=os.cpu_count() or 1,
                   help="CPU threads for the cpu backend and the CPU fallback [all cores]")
    p.add_argument("--gpu", type=int, default=0, help="the GPU to use [0]")
    p.add_argument("--show", type=int, default=5, help="mismatches to print in detail [5]")
    return p


def _describe(jobs, k: int) -> str:
    return (f"job {k}: read {int(jobs.read_id[k])} chain {int(jobs.chain[k])} seed {int(jobs.seed[k])} "
            f"{'LR'[int(jobs.side[k]) & 1]}{int(jobs.try_[k])} qlen {int(jobs.qoff[k + 1] - jobs.qoff[k])} "
            f"tlen {int(jobs.toff[k + 1] - jobs.toff[k])} h0 {int(jobs.h0[k])} w {int(jobs.w[k])} "
            f"end_bonus {int(jobs.end_bonus[k])} zdrop {int(jobs.zdrop[k])}")


def main(argv: list[str]) -> int:
    try:
        a = parser().parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    if a.threads < 1:
        log.error(FUNC, "-t must be at least 1")
        return 2
    from ..bwa.dump import DumpError, ExtendResults, read_dump

    alloc = None
    if a.backend == "cuda":   # the sequences straight into page-locked memory: no staging copy later
        from ..backends import cuda

        if not cuda.available():
            log.error(FUNC, "--backend cuda: CuPy sees no GPU")
            return 2
        import cupy

        from ..backends.cuda.staging import pinned_empty as alloc

        cupy.cuda.Device(a.gpu).use()
    t0 = time.perf_counter()
    try:
        head, jobs, want = read_dump(a.dump, alloc)
    except (OSError, DumpError) as e:
        log.error(FUNC, f"cannot read the seed dump '{a.dump}': {e}")
        return 2
    log.info(FUNC, f"read {jobs.n} ksw_extend2 jobs of {head['bwa']} from {a.dump} "
                   f"({time.perf_counter() - t0:.2f} s)")
    from .._native import bwa as native

    n = jobs.n
    cells = np.zeros(n, np.int64)
    if a.backend == "cpu":
        t = time.perf_counter()
        got = native.extend2(jobs, n_threads=a.threads)
        dt = time.perf_counter() - t
        cells = native.cells(jobs, n_threads=a.threads)
        what = f"BWA's ksw_extend2 on {a.threads} CPU threads"
    else:
        from ..backends.cuda import ksw_extend2 as gpu

        jobs = gpu.pin(jobs)
        reasons = gpu.supports(jobs)
        take, rest = np.flatnonzero(reasons == 0), np.flatnonzero(reasons != 0)
        got = ExtendResults.empty(n)
        t = time.perf_counter()
        if len(take):
            r = gpu.run(jobs, take)
            for f in ("score", "qle", "tle", "gtle", "gscore", "max_off"):
                getattr(got, f)[take] = getattr(r, f)
            cells[take] = gpu.last_stats["cells"]
        if len(rest):
            r = native.extend2(jobs, rest, n_threads=a.threads)
            for f in ("score", "qle", "tle", "gtle", "gscore", "max_off"):
                getattr(got, f)[rest] = getattr(r, f)
        dt = time.perf_counter() - t
        if len(rest):
            cells[rest] = native.cells(jobs, rest, n_threads=a.threads)
            counts = {gpu.REASONS[int(c)]: int((reasons == c).sum()) for c in np.unique(reasons[rest])}
            log.info(FUNC, f"{len(rest)} jobs on the CPU instead: {counts}")
        dev = cupy.cuda.runtime.getDeviceProperties(a.gpu)["name"].decode()
        what = f"the CUDA kernel on {dev} (kernel build included on a first run)"
    bad = want.mismatches(got)
    for k in bad[:max(0, a.show)]:
        log.error(FUNC, f"mismatch: {_describe(jobs, int(k))}: bwa {want.row(int(k))} vs {a.backend} {got.row(int(k))}")
    total = int(cells.sum())
    log.info(FUNC, f"{n} jobs, {total} DP cells, {dt:.3f} s with {what}: "
                   f"{total / dt / 1e9 if dt > 0 else 0.0:.2f} G cells/s")
    if len(bad):
        log.error(FUNC, f"{len(bad)} of {n} jobs differ from BWA")
        return 1
    log.info(FUNC, f"all {n} jobs equal BWA's outputs (score, qle, tle, gtle, gscore, max_off)")
    return 0
