"""Launcher of kernels/ksw_extend2.cu: BWA's ksw_extend2 over an ExtendJobs on one GPU, bit-exact.

`supports(jobs)` gives a reason code per job (0: the kernel takes it); `run(jobs, idx)` computes the
jobs idx (all must be supported: run() repeats only the cheap checks, not the scan of every base
against the alphabet, so call supports() first) and returns an ExtendResults whose rows follow idx; the DP cells of
each job (the sum of end - beg over the rows ksw_extend2 runs) are in `last_stats["cells"]`.

Work plan of one `run` (short-read jobs are small and many, long-read jobs large and skewed):
1. per job, the band ksw_extend2 can use, min(qlen, 2*w' + 1) with w' its clamped band width (w' is
   computed here and passed to the kernel);
2. each job goes to the smallest ring kernel `ksw_extend2_ring{G}x{C}` (a group of G lanes per job,
   32/G jobs per warp, the row buffer in registers as a ring of G*C slots) whose ring holds the
   whole row (qlen + 1 <= G*C) or the band with a lane to spare (band <= G*C - C); jobs that fit
   none (or have a matrix side over 8) go to `ksw_extend2_thread` (a thread per job, row buffers
   in global memory);
3. the sequences go up in chunks (at most MAX_CHUNKS contiguous job ranges of about CHUNK_BYTES,
   the chunk with the largest job first) through a reused page-locked staging buffer,
   double-buffered, on a copy stream; each chunk's kernels start on the chunk's own stream as
   soon as it has landed (classes of larger rings first, jobs by cell bound, largest first), so
   the long tail of one kernel overlaps the other chunks' kernels.

Device buffers (all owned by `run`, from CuPy's memory pool on the current device, valid until the
results are back on the host): sequences, offsets, per-job parameters, packed matrix rows, launch
order, results and cells for the whole call; the thread kernel's row-buffer arena per chunk.
"""
from __future__ import annotations

import os
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


RING = ((8, 2), (8, 4), (16, 4), (16, 6), (16, 8), (32, 5), (32, 7), (32, 10), (32, 13), (32, 16))
RING_M_MAX = 8                # the ring kernels hold a matrix row in 8 bytes
N_PRM2 = 8                    # Q_* of the kernel
PACK_BIT = 1 << 30
CHUNK_BYTES = 4 << 20         # sequence bytes per upload chunk (kernels of a chunk start when it lands)
MAX_CHUNKS = 6                # a stream per chunk (with the copy stream, within CUDA's 8 hardware queues)

_pinned: dict = {}


def _classes(qlen: np.ndarray, band: np.ndarray, msz: np.ndarray, mode: str) -> np.ndarray:
    """Kernel class per job: -1 = thread per job, else the index into RING (group of G lanes, C slots each):
    the first ring that holds the whole row (qlen + 1 <= G*C) or the band with a lane to spare."""
    if mode == "thread":
        return np.full(len(qlen), -1, np.int32)
    idx = np.array([i for i, (g, _) in enumerate(RING) if mode != "warp" or g == 32])
    whole = np.array([RING[i][0] * RING[i][1] for i in idx])      # increasing
    spare = np.array([RING[i][0] * RING[i][1] - RING[i][1] for i in idx])  # increasing
    k = np.minimum(np.searchsorted(whole, qlen + 1), np.searchsorted(spare, band))
    cls = np.where(k < len(idx), idx[np.minimum(k, len(idx) - 1)], -1).astype(np.int32)
    cls[msz > RING_M_MAX] = -1
    return cls


def _pinned_buffer(nbytes: int):
    """A page-locked host buffer of at least nbytes, reused between calls (one per process)."""
    import cupy

    if _pinned.get("size", 0) < nbytes:
        _pinned.clear()
        size = max(nbytes, 1 << 20)
        _pinned["buf"], _pinned["size"] = cupy.cuda.alloc_pinned_memory(size), size
    return np.frombuffer(_pinned["buf"], np.uint8, nbytes)


def _upload(dst, src: np.ndarray, stream, pinned) -> None:
    """src (host, uint8) into the device array dst on stream: through `pinned` when given, else pageable."""
    if not len(src):
        return
    if pinned is not None:
        pinned[:len(src)] = src
        src = pinned[:len(src)]
    dst.set(src, stream=stream)


def _launch(launches, fns, streams, d_order, d_q, d_qoff, d_t, d_toff, d_prm, d_mrow, d_res, d_cells) -> list:
    """Launch the ring kernels of `launches` ((class, start, stop, upload event, stream))."""
    for ci, s0, s1, ev, st in launches:
        g, _ = RING[ci]
        st.wait_event(ev)
        nj = s1 - s0
        with st:
            fns[ci](((nj * g + BLOCK - 1) // BLOCK,), (BLOCK,),
                    (d_order[s0:s1], np.int32(nj), d_q, d_qoff, d_t, d_toff, d_prm, d_mrow, d_res, d_cells))
    return []


def run(jobs: ExtendJobs, idx=None, gpu_mem: int | None = None, mode: str = "auto",
        split: bool = False) -> ExtendResults:
    """Run the jobs idx (default: all) on the GPU; rows of the result follow idx.

    mode: "auto" (each job on the smallest ring kernel that holds its band, else the thread kernel),
    "warp" (ring kernels of a whole warp per job only) or "thread" (every job on the thread kernel),
    for testing. Timings of the last call are in last_stats (t_prep, t_h2d, t_kernel, t_d2h, t_total);
    split=True uploads everything before the first kernel starts, so t_kernel is the kernels alone
    (the default overlaps each chunk's kernels with the next chunks' uploads).
    """
    import cupy

    t_start = time.perf_counter()
    idx = np.arange(jobs.n) if idx is None else np.asarray(idx, np.int64)
    budget = default_gpu_mem() if gpu_mem is None else int(gpu_mem)
    sub = jobs if (len(idx) == jobs.n and np.array_equal(idx, np.arange(jobs.n))) else jobs.take(idx)
    n = sub.n
    stats = {"jobs": n, "chunks": 0, "cells": np.zeros(n, np.int64), "classes": {}}
    if n == 0:
        last_stats.clear()
        last_stats.update(stats, t_total=0.0)
        return ExtendResults.empty(0)
    qlen, tlen = np.diff(sub.qoff), np.diff(sub.toff)
    # the cheap part of supports(); the base-code scan over the sequences is the caller's (supports())
    if (qlen.min() < 1 or sub.h0.min() < 1 or min(sub.e_del.min(), sub.e_ins.min()) < 1
            or sub.mat_id.min() < 0 or sub.mat_id.max() >= len(sub.mats) or (qlen + 1).max() * 8 > budget):
        raise ValueError("run() got jobs that supports() rejects; route them to the CPU")
    weff = sub.band_w()
    band = np.minimum(qlen, 2 * weff + 1)
    mats, mat_off, mat_m = _mat_tables(sub)
    msz = mat_m[sub.mat_id]
    cls = _classes(qlen, band, msz, mode)
    # ring jobs: one int32 record each; the row max is packed with its column when it fits in 16 bits
    mx = np.array([max(0, int(x.max())) if len(x) else 0 for x in sub.mats], np.int64)[sub.mat_id]
    pack = ((qlen < 65535) & (sub.h0 + (qlen + 1) * mx < 65535) & (sub.o_del + sub.e_del >= 0)
            & (sub.o_ins + sub.e_ins >= 0))
    prm = np.empty((n, N_PRM2), np.int32)
    prm[:, 0] = sub.h0
    prm[:, 1] = np.minimum(weff, 1 << 30)
    prm[:, 2] = sub.zdrop
    prm[:, 3] = sub.o_del
    prm[:, 4] = sub.e_del
    prm[:, 5] = sub.o_ins
    prm[:, 6] = sub.e_ins
    prm[:, 7] = sub.mat_id | np.where(pack, PACK_BIT, 0)
    mrow = np.zeros((max(len(sub.mats), 1), 8, 8), np.int8)
    for i, x in enumerate(sub.mats):
        m = int(mat_m[i])
        if m <= RING_M_MAX:
            mrow[i, :m, :m] = x.reshape(m, m)
    # upload chunks: contiguous job ranges of about CHUNK_BYTES of sequence, the one with the
    # largest job first; launch order within a chunk and class: largest cell bound first
    seqb = sub.qoff + sub.toff
    nch = int(min(MAX_CHUNKS, max(1, seqb[-1] // CHUNK_BYTES)))
    cut = np.searchsorted(seqb, np.arange(1, nch) * (seqb[-1] / nch)) if nch > 1 else np.zeros(0, np.int64)
    bounds = np.unique(np.concatenate([[0], cut, [n]]))
    nch = len(bounds) - 1
    est = band * tlen + qlen
    chunk_of = np.repeat(np.arange(nch), np.diff(bounds))
    cmax = np.maximum.reduceat(est, bounds[:-1])
    rank = np.empty(nch, np.int64)
    rank[np.argsort(-cmax, kind="stable")] = np.arange(nch)
    nbk = 1 << 9
    size_key = nbk - 1 - np.minimum(np.log2(est + 1) * 16, nbk - 1).astype(np.int64)
    ncls = len(RING) + 1
    seg = rank[chunk_of] * ncls + (cls + 1)
    key = seg * nbk + size_key  # < 6 * 11 * 512 < 2**16: numpy's stable sort of uint16 is a radix sort
    order = np.argsort(key.astype(np.uint16 if nch * ncls * nbk <= 1 << 16 else np.int64), kind="stable")
    order = order.astype(np.int32)
    seg_cnt = np.bincount(seg, minlength=nch * ncls)
    seg_start = np.concatenate([[0], np.cumsum(seg_cnt)])
    for ci in range(-1, len(RING)):
        c = int((cls == ci).sum())
        if c:
            stats["classes"]["thread" if ci < 0 else "ring%dx%d" % RING[ci]] = c
    mod = load_module("ksw_extend2.cu")
    stats["t_prep"] = time.perf_counter() - t_start

    t0 = time.perf_counter()
    upload = os.environ.get("GPUEXT_KSW2_UPLOAD", "pinned")
    fns = {ci: mod.get_function("ksw_extend2_ring%dx%d" % RING[ci]) for ci in range(len(RING))}
    d_q = cupy.empty(max(int(sub.qoff[-1]), 1), np.uint8)
    d_t = cupy.empty(max(int(sub.toff[-1]), 1), np.uint8)
    d_qoff, d_toff = cupy.asarray(sub.qoff), cupy.asarray(sub.toff)
    d_prm, d_order = cupy.asarray(prm.reshape(-1)), cupy.asarray(order)
    d_mrow = cupy.asarray(mrow.reshape(-1).view(np.uint32))
    d_res = cupy.empty(n * 6, np.int32)
    d_cells = cupy.empty(n, np.int64)
    copy_st = cupy.cuda.Stream(non_blocking=True)
    streams = [cupy.cuda.Stream(non_blocking=True) for _ in range(nch + 1)]  # [0]: thread kernel
    cq, ct = np.diff(sub.qoff[bounds]), np.diff(sub.toff[bounds])
    slot = int(cq.max() + ct.max())
    pinned = _pinned_buffer(2 * slot) if upload == "pinned" else None
    slot_ev = [None, None]  # the copy that last read each half of the staging buffer
    cupy.cuda.Device().synchronize()  # the small arrays are on the device
    stats["t_h2d_small"] = time.perf_counter() - t0
    thread_jobs, events, launches = [], [], []
    for r in range(nch):
        ch = int(np.flatnonzero(rank == r)[0])
        a, b = int(bounds[ch]), int(bounds[ch + 1])
        qa, qb, ta, tb = int(sub.qoff[a]), int(sub.qoff[b]), int(sub.toff[a]), int(sub.toff[b])
        with copy_st:
            if pinned is None:
                _upload(d_q[qa:qb], sub.qseq[qa:qb], copy_st, None)
                _upload(d_t[ta:tb], sub.tseq[ta:tb], copy_st, None)
            else:
                h = r & 1
                if slot_ev[h] is not None:
                    slot_ev[h].synchronize()  # that half is free again
                buf = pinned[h * slot:(h + 1) * slot]
                _upload(d_q[qa:qb], sub.qseq[qa:qb], copy_st, buf[:qb - qa])
                _upload(d_t[ta:tb], sub.tseq[ta:tb], copy_st, buf[qb - qa:])
            ev = copy_st.record()
            slot_ev[r & 1] = ev
        events.append(ev)
        stats["chunks"] += 1
        for ci in reversed(range(len(RING))):
            s0, s1 = int(seg_start[r * ncls + ci + 1]), int(seg_start[r * ncls + ci + 2])
            if s1 > s0:
                launches.append((ci, s0, s1, ev, streams[r + 1]))
        s0, s1 = int(seg_start[r * ncls]), int(seg_start[r * ncls + 1])
        if s1 > s0:
            thread_jobs.append(order[s0:s1])
        if not split:
            launches = _launch(launches, fns, streams, d_order, d_q, d_qoff, d_t, d_toff, d_prm, d_mrow, d_res,
                               d_cells)
    if split:  # every upload done first, then the kernels alone
        copy_st.synchronize()
        stats["t_h2d"] = time.perf_counter() - t0
        t_k = time.perf_counter()
        _launch(launches, fns, streams, d_order, d_q, d_qoff, d_t, d_toff, d_prm, d_mrow, d_res, d_cells)
    else:
        stats["t_h2d"] = time.perf_counter() - t0  # host side of the uploads, overlapped with the kernels
        t_k = time.perf_counter()
    if thread_jobs:
        for ev in events:
            streams[0].wait_event(ev)
        with streams[0]:
            _run_thread(mod, sub, np.concatenate(thread_jobs), qlen, budget, d_q, d_qoff, d_t, d_toff, mats,
                        mat_off, mat_m, d_res, d_cells, stats)
    for st in streams:
        st.synchronize()
    stats["t_kernel"] = time.perf_counter() - t_k
    t_d = time.perf_counter()
    h = cupy.asnumpy(d_res).reshape(n, 6)
    stats["cells"] = cupy.asnumpy(d_cells)
    out = ExtendResults(*(h[:, f] for f in range(6)))
    stats["t_d2h"] = time.perf_counter() - t_d
    stats["t_total"] = time.perf_counter() - t_start
    last_stats.clear()
    last_stats.update(stats)
    return out


def _run_thread(mod, sub, jobs_t, qlen, budget, d_q, d_qoff, d_t, d_toff, mats, mat_off, mat_m, d_res, d_cells,
                stats) -> None:
    """The thread kernel over jobs_t (on the current stream): 32 jobs of similar size per warp, their row
    buffers interleaved in an arena cut into chunks that fit the memory budget."""
    import cupy

    fn = mod.get_function("ksw_extend2_thread")
    prm = np.stack([sub.h0, sub.w, sub.end_bonus, sub.zdrop, sub.o_del, sub.e_del, sub.o_ins, sub.e_ins,
                    sub.mat_id], axis=1).astype(np.int32)
    d_prm = cupy.asarray(prm.reshape(-1))
    d_mats, d_mat_off, d_mat_m = cupy.asarray(mats), cupy.asarray(mat_off), cupy.asarray(mat_m)
    sel = jobs_t[np.argsort(-qlen[jobs_t], kind="stable")]
    starts = np.arange(0, len(sel), 32)
    elems = (32 * (np.maximum.reduceat(qlen[sel], starts) + 1)).astype(np.int64)
    cap = max(1, budget // 8)
    u0 = 0
    while u0 < len(elems):
        csum = np.cumsum(elems[u0:])
        u1 = u0 + max(1, int(np.searchsorted(csum, cap, side="right")))
        unit_off = np.cumsum(elems[u0:u1]) - elems[u0:u1]
        j0, j1 = u0 * 32, min(u1 * 32, len(sel))
        k = np.arange(j0, j1)
        off = unit_off[k // 32 - u0] + k % 32
        d_eh = cupy.empty(int(elems[u0:u1].sum()), dtype=np.int64)  # int2 {h, e}; the kernel initialises it
        d_order, d_off = cupy.asarray(sel[j0:j1].astype(np.int32)), cupy.asarray(off.astype(np.int64))
        nj = j1 - j0
        fn(((nj + BLOCK - 1) // BLOCK,), (BLOCK,),
           (d_order, np.int32(nj), d_q, d_qoff, d_t, d_toff, d_prm, d_mats, d_mat_off, d_mat_m, d_off, d_eh, d_res,
            d_cells))
        cupy.cuda.get_current_stream().synchronize()
        del d_eh, d_order, d_off
        u0 = u1


__all__ = ["supports", "run", "REASONS", "REJECT_INPUT", "REJECT_GAP", "REJECT_RANGE", "REJECT_MEMORY"]
