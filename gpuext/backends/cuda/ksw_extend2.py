"""Launcher of kernels/ksw_extend2.cu: BWA's ksw_extend2 over an ExtendJobs on one GPU, bit-exact.

`supports(jobs)` gives a reason code per job (0: the kernel takes it); `run(jobs, idx)` computes the
jobs idx (all must be supported: run() repeats only the cheap checks, not the scan of every base
against the alphabet, so call supports() first) and returns an ExtendResults whose rows follow idx; the DP cells of
each job (the sum of end - beg over the rows ksw_extend2 runs) are in `last_stats["cells"]`.

Work plan of one `run` (uneven bucketing: short-read jobs are small and many, long-read jobs large
and skewed):
1. per job, the band ksw_extend2 can use, min(qlen, 2*w' + 1) with w' its clamped band width;
2. jobs with a band of at most THREAD_MAX_BAND columns, or wider than 32*16, go to
   `ksw_extend2_thread` (a thread per job, 32 jobs of similar size per warp); the others go to a
   warp per job, `ksw_extend2_warp{4,8,16}` by how many columns each lane must hold;
3. each class is ordered by an upper bound of its cells, largest first (the long jobs start first),
   and cut into chunks whose row buffers fit the memory budget; the classes of a chunk run on their
   own streams.

Device buffers (all owned by `run`, from CuPy's memory pool on the current device, valid from their
H2D copy until the results are back on the host): sequences, offsets, per-job parameters and the
scoring matrices for the whole call; per chunk the row-buffer arena ((qlen+1) int2 per job, or 32 x
(max qlen + 1) per thread-kernel warp) and the launch orders; results and cells for the whole call.
"""
from __future__ import annotations

import time

import numpy as np

from ...bwa.dump import ExtendJobs, ExtendResults
from .loader import load_module

# supports() reason codes (0: the kernel takes the job)
REJECT_INPUT = 1    # qlen < 1, tlen < 0, h0 < 1, unknown matrix or a base >= m (ksw_extend2 would fail)
REJECT_GAP = 2      # e_del or e_ins < 1 (the band clamp divides by them; F's prefix form needs e_ins > 0)
REJECT_RANGE = 3    # scores could leave int32
REJECT_MEMORY = 4   # the job's row buffer alone is over the GPU memory budget
REASONS = {0: "ok", REJECT_INPUT: "invalid input", REJECT_GAP: "gap extension < 1",
           REJECT_RANGE: "score range", REJECT_MEMORY: "over GPU memory budget"}

THREAD_MAX_BAND = 16        # bands up to this many columns: a thread per job
WARP_CMAX = (4, 8, 16)      # columns per lane of the warp kernels (bands up to 128, 256, 512)
BLOCK = 128
N_PRM = 9

last_stats: dict = {}


def default_gpu_mem() -> int:
    """The device memory budget in bytes ($GPUEXT_GPU_MEM or half the device; see ksw_extd2)."""
    from .ksw_extd2 import default_gpu_mem as budget

    return budget()


def _mat_tables(jobs: ExtendJobs):
    mats = np.concatenate(jobs.mats) if jobs.mats else np.zeros(1, np.int8)
    mat_m = np.array([int(round(np.sqrt(len(x)))) for x in jobs.mats] or [0], np.int32)
    mat_off = np.zeros(max(len(jobs.mats), 1), np.int32)
    if jobs.mats:
        mat_off[1:] = np.cumsum([len(x) for x in jobs.mats])[:-1]
    return mats, mat_off, mat_m


def supports(jobs: ExtendJobs, gpu_mem: int | None = None) -> np.ndarray:
    """Reason code per job (int8): 0 when this kernel takes it, else REJECT_*."""
    n = jobs.n
    out = np.zeros(n, np.int8)
    if n == 0:
        return out
    qlen, tlen = jobs.qlen().astype(np.int64), jobs.tlen().astype(np.int64)
    need = (qlen + 1) * 8
    budget = default_gpu_mem() if gpu_mem is None else int(gpu_mem)
    out[need > budget] = REJECT_MEMORY
    absmax = np.array([int(np.abs(x.astype(np.int64)).max()) if len(x) else 0 for x in jobs.mats] or [0],
                      np.int64)
    bad_mat = (jobs.mat_id < 0) | (jobs.mat_id >= len(jobs.mats))
    a = absmax[np.where(bad_mat, 0, jobs.mat_id)]
    gap = np.maximum.reduce([np.abs(jobs.o_del.astype(np.int64)), np.abs(jobs.o_ins.astype(np.int64)),
                             np.abs(jobs.e_del.astype(np.int64)), np.abs(jobs.e_ins.astype(np.int64))])
    reach = jobs.h0.astype(np.int64) + (qlen + tlen + 1) * (a + gap) + np.abs(jobs.end_bonus.astype(np.int64))
    out[(reach >= 1 << 30) | (qlen * a >= 1 << 30)] = REJECT_RANGE
    out[(jobs.e_del < 1) | (jobs.e_ins < 1)] = REJECT_GAP
    bad = bad_mat | (qlen < 1) | (tlen < 0) | (jobs.h0 < 1)
    m = np.zeros(n, np.int64)
    m[~bad_mat] = jobs.m()[~bad_mat]
    for seq, off in ((jobs.qseq, jobs.qoff), (jobs.tseq, jobs.toff)):
        if len(seq):
            lens = np.diff(off)
            top = np.maximum.reduceat(seq, np.minimum(off[:-1], len(seq) - 1))
            bad |= (lens > 0) & (top >= m)
    out[bad] = REJECT_INPUT
    return out


def _classes(qlen: np.ndarray, band: np.ndarray, mode: str) -> np.ndarray:
    """Kernel class per job: 0 = thread per job, 4/8/16 = warp per job with that many columns per lane."""
    cls = np.zeros(len(qlen), np.int32)
    if mode == "thread":
        return cls
    for cm in reversed(WARP_CMAX):
        cls[band <= 32 * cm] = cm
    if mode == "auto":
        cls[band <= THREAD_MAX_BAND] = 0
    return cls


def run(jobs: ExtendJobs, idx=None, gpu_mem: int | None = None, mode: str = "auto") -> ExtendResults:
    """Run the jobs idx (default: all) on the GPU; rows of the result follow idx.

    mode: "auto" (thread or warp kernel by band), "thread" (every job on the thread kernel) or "warp"
    (every job whose band fits on a warp kernel; the rest on the thread kernel), for testing.
    """
    import cupy

    t_start = time.perf_counter()
    idx = np.arange(jobs.n) if idx is None else np.asarray(idx, np.int64)
    budget = default_gpu_mem() if gpu_mem is None else int(gpu_mem)
    sub = jobs if (len(idx) == jobs.n and np.array_equal(idx, np.arange(jobs.n))) else jobs.take(idx)
    n = sub.n
    res = ExtendResults.empty(n)
    stats = {"jobs": n, "chunks": 0, "cells": np.zeros(n, np.int64), "classes": {}}
    if n == 0:
        last_stats.clear()
        last_stats.update(stats, t_total=0.0)
        return res
    qlen, tlen = sub.qlen().astype(np.int64), sub.tlen().astype(np.int64)
    # the cheap part of supports(); the base-code scan over the sequences is the caller's (supports())
    if (qlen.min() < 1 or sub.h0.min() < 1 or min(sub.e_del.min(), sub.e_ins.min()) < 1
            or sub.mat_id.min() < 0 or sub.mat_id.max() >= len(sub.mats) or (qlen + 1).max() * 8 > budget):
        raise ValueError("run() got jobs that supports() rejects; route them to the CPU")
    band = np.minimum(qlen, 2 * sub.band_w() + 1)
    cls = _classes(qlen, band, mode)
    est = band * tlen + qlen  # upper bound of the cells (+ row -1 set-up)

    mod = load_module("ksw_extend2.cu")
    fns = {0: mod.get_function("ksw_extend2_thread")}
    fns.update({cm: mod.get_function(f"ksw_extend2_warp{cm}") for cm in WARP_CMAX})
    mats, mat_off, mat_m = _mat_tables(sub)
    prm = np.stack([sub.h0, sub.w, sub.end_bonus, sub.zdrop, sub.o_del, sub.e_del, sub.o_ins, sub.e_ins,
                    sub.mat_id], axis=1).astype(np.int32)
    t0 = time.perf_counter()
    d_q = cupy.asarray(sub.qseq if len(sub.qseq) else np.zeros(1, np.uint8))
    d_t = cupy.asarray(sub.tseq if len(sub.tseq) else np.zeros(1, np.uint8))
    d_qoff, d_toff = cupy.asarray(sub.qoff), cupy.asarray(sub.toff)
    d_prm = cupy.asarray(prm.reshape(-1))
    d_mats, d_mat_off, d_mat_m = cupy.asarray(mats), cupy.asarray(mat_off), cupy.asarray(mat_m)
    d_res = cupy.zeros(n * 6, np.int32)
    d_cells = cupy.zeros(n, np.int64)
    stats["t_h2d"] = time.perf_counter() - t0

    # units: a warp-kernel job, or a group of up to 32 thread-kernel jobs (one warp of the thread
    # kernel, interleaved row buffers); jobs in launch order, units contiguous in it
    job_order, job_unit, job_lane, unit_elems = [], [], [], []
    uid = 0
    for c in sorted(set(cls.tolist()), reverse=True):
        sel = np.flatnonzero(cls == c)
        sel = sel[np.argsort(-est[sel], kind="stable")]
        stats["classes"]["thread" if c == 0 else f"warp{c}"] = int(len(sel))
        k = np.arange(len(sel))
        if c == 0:
            starts = np.arange(0, len(sel), 32)
            unit_elems.append(32 * (np.maximum.reduceat(qlen[sel], starts) + 1))
            job_unit.append(uid + k // 32)
            job_lane.append(k % 32)
            uid += len(starts)
        else:
            unit_elems.append(qlen[sel] + 1)
            job_unit.append(uid + k)
            job_lane.append(np.zeros(len(sel), np.int64))
            uid += len(sel)
        job_order.append(sel)
    order_all = np.concatenate(job_order)
    unit_of = np.concatenate(job_unit)
    lane_of = np.concatenate(job_lane)
    elems = np.concatenate(unit_elems).astype(np.int64)
    cls_of = cls[order_all]
    cap = max(1, budget // 8)
    streams: dict[int, object] = {}
    t_k = time.perf_counter()
    u0 = 0
    while u0 < len(elems):
        csum = np.cumsum(elems[u0:])
        u1 = u0 + max(1, int(np.searchsorted(csum, cap, side="right")))
        stats["chunks"] += 1
        unit_off = np.cumsum(elems[u0:u1]) - elems[u0:u1]
        j0, j1 = np.searchsorted(unit_of, [u0, u1])
        off = unit_off[unit_of[j0:j1] - u0] + lane_of[j0:j1]
        d_eh = cupy.empty(int(elems[u0:u1].sum()), dtype=np.int64)  # int2 {h, e}; the kernel initialises it
        keep = []
        cupy.cuda.Device().synchronize()
        for c in np.unique(cls_of[j0:j1]):
            m_c = cls_of[j0:j1] == c
            order_a = order_all[j0:j1][m_c].astype(np.int32)
            st = streams.setdefault(int(c), cupy.cuda.Stream(non_blocking=True))
            with st:
                d_order, d_off = cupy.asarray(order_a), cupy.asarray(off[m_c].astype(np.int64))
                keep.append((d_order, d_off))
                nj = len(order_a)
                threads = nj if c == 0 else 32 * nj
                fns[int(c)](((threads + BLOCK - 1) // BLOCK,), (BLOCK,),
                            (d_order, np.int32(nj), d_q, d_qoff, d_t, d_toff, d_prm, d_mats, d_mat_off, d_mat_m,
                             d_off, d_eh, d_res, d_cells))
        for st in streams.values():
            st.synchronize()
        del d_eh, keep
        u0 = u1
    stats["t_kernel"] = time.perf_counter() - t_k
    h = cupy.asnumpy(d_res).reshape(n, 6)
    stats["cells"] = cupy.asnumpy(d_cells)
    out = ExtendResults(*(h[:, f] for f in range(6)))
    stats["t_total"] = time.perf_counter() - t_start
    last_stats.clear()
    last_stats.update(stats)
    return out


__all__ = ["supports", "run", "REASONS", "REJECT_INPUT", "REJECT_GAP", "REJECT_RANGE", "REJECT_MEMORY"]
