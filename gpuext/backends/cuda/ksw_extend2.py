"""Launcher of kernels/ksw_extend2.cu: BWA's ksw_extend2 over an ExtendJobs on one GPU, bit-exact.

`supports(jobs)` gives a reason code per job (0: the kernel takes it); `run(jobs, idx)` computes the
jobs idx (all must be supported: run() repeats only the cheap checks, not the scan of every base
against the alphabet, so call supports() first) and returns an ExtendResults whose rows follow idx; the DP cells
(the sum of end - beg over the rows ksw_extend2 runs) are in `last_stats["cells_total"]`, and per job in
`last_stats["cells"]`. `pin(jobs)` puts the jobs' arrays in page-locked memory, so that run() sends
them without the staging copy (`gpuext bwa-replay` reads its dump's sequences straight into such memory).

Work plan of one `run` (short-read jobs are small and many, long-read jobs large and skewed; the host
does no per-job work: the cheap checks of supports() are the plan kernel's):
1. the per-job inputs go up as the ExtendJobs holds them: page-locked arrays in DMAs of their own,
   the others (a parameter the same for all jobs as one value) through a pinned buffer in one DMA; `ksw_extend2_plan` computes on the device each
   job's clamped band w' (ksw.c:434-444), band = min(qlen, 2*w' + 1), its kernel class (the
   smallest ring kernel `ksw_extend2_ring{G}x{C}` - a group of G lanes per job, 32/G jobs per
   warp, the row buffer in registers as a ring of G*C slots - whose ring holds the whole row or
   the band with a lane to spare; else `ksw_extend2_thread`, a thread per job with its row buffer
   in global memory), the ring kernels' record and its launch segment (chunk, class, size bucket);
   `ksw_extend2_scan` the segments' starts and `ksw_extend2_order` places every job in its segment
   (a counting sort); nothing is read back before the launches;
2. the sequences go up in chunks (at most MAX_CHUNKS contiguous job ranges of about CHUNK_BYTES, the
   one with the job of most rows first; asynchronous DMAs on a copy stream, from the jobs' own arrays
   when they are page-locked, else from a pinned buffer that copy threads fill; enqueued once the plan
   is launched); each chunk's ring kernels start as soon as it has
   landed, one stream per (chunk, class) (classes of larger rings first, larger cell bounds first
   within a class), so no kernel waits behind another's longest job; the grids cover all the
   chunk's jobs and each kernel reads its segment's range on the device;
3. the results (field-major) and the cells (per job, or their sum) come back, a chunk's as soon as its
   kernels are done, into page-locked memory from CuPy's pool that the returned arrays are views of.

Device buffers (all owned by `run`, from CuPy's memory pool on the current device, valid until the
results are back on the host): the staged inputs and sequences, the per-job records, launch order,
results and cells for the whole call; the thread kernel's row-buffer arena per chunk.
"""
from __future__ import annotations

import time

import numpy as np

from ...bwa.dump import ExtendJobs, ExtendResults
from .loader import load_module
from .staging import Staging, is_pinned, page_locked, pinned_empty, pooled_pinned, release, stream

# supports() reason codes (0: the kernel takes the job)
REJECT_INPUT = 1    # qlen < 1, tlen < 0, h0 < 1, unknown matrix or a base >= m (ksw_extend2 would fail)
REJECT_GAP = 2      # e_del or e_ins < 1 (the band clamp divides by them; F's prefix form needs e_ins > 0)
REJECT_RANGE = 3    # scores could leave int32
REJECT_MEMORY = 4   # the job's row buffer alone is over the GPU memory budget
REASONS = {0: "ok", REJECT_INPUT: "invalid input", REJECT_GAP: "gap extension < 1",
           REJECT_RANGE: "score range", REJECT_MEMORY: "over GPU memory budget"}

BLOCK = 128

last_stats: dict = {}


def default_gpu_mem() -> int:
    """The device memory budget in bytes ($GPUEXT_GPU_MEM or half the device; see ksw_extd2)."""
    from .ksw_extd2 import default_gpu_mem as budget

    return budget()


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


RING = ((4, 4), (4, 8), (8, 8), (8, 12), (8, 16), (32, 5), (32, 7), (32, 10), (32, 13), (32, 16))  # ring_g/ring_c
RING_M_MAX = 8                # the ring kernels hold a matrix row in 8 bytes
N_PRM2 = 8                    # Q_* of the kernel
NCLS = len(RING) + 1          # kernel classes: 0 = thread kernel, 1 + i = RING[i]
MODES = {"auto": 0, "warp": 1, "thread": 2}
CHUNK_BYTES = 4 << 20         # sequence bytes per upload chunk (kernels of a chunk start when it lands)
MAX_CHUNKS = 6                # the kernel's plan histogram holds 6 chunks x NCLS classes x NSIZE sizes
NSIZE = 8                     # size buckets per (chunk, class) segment of the launch order


PER_JOB = ("h0", "w", "end_bonus", "zdrop", "o_del", "e_del", "o_ins", "e_ins", "mat_id")   # run()'s per-job inputs


def pin(jobs: ExtendJobs) -> ExtendJobs:
    """The jobs with their sequences and per-job arrays in page-locked host memory (staging.pinned_empty;
    arrays there already are kept): run() then sends them with DMAs straight from there, no staging
    copy, as long as it runs all of them (idx None or every job in order)."""
    from dataclasses import replace

    return replace(jobs, **{k: page_locked(getattr(jobs, k), pinned_empty)
                            for k in ("qseq", "tseq", "qoff", "toff", *PER_JOB)})


def _mat_stats(jobs: ExtendJobs):
    """Per matrix: side m, max(0, largest entry), the ring kernels' 8x8 byte rows, and all matrices
    concatenated with their offsets (the thread kernel's)."""
    mat_m = np.array([int(round(np.sqrt(len(x)))) for x in jobs.mats] or [0], np.int32)
    mat_max = np.array([max(0, int(x.max())) if len(x) else 0 for x in jobs.mats] or [0], np.int32)
    mrow = np.zeros((max(len(jobs.mats), 1), 8, 8), np.int8)
    for i, x in enumerate(jobs.mats):
        m = int(mat_m[i])
        if m <= RING_M_MAX:
            mrow[i, :m, :m] = x.reshape(m, m)
    mats = np.concatenate(jobs.mats) if jobs.mats else np.zeros(1, np.int8)
    mat_off = np.zeros(max(len(jobs.mats), 1), np.int32)
    if jobs.mats:
        mat_off[1:] = np.cumsum([len(x) for x in jobs.mats])[:-1]
    return mat_m, mat_max, mrow, mats, mat_off


def _launch_ring(fn, g, nj, args):
    """A ring kernel over nj jobs, g lanes each, in blocks of BLOCK threads."""
    fn(((nj * g + BLOCK - 1) // BLOCK,), (BLOCK,), args)


def run(jobs: ExtendJobs, idx=None, gpu_mem: int | None = None, mode: str = "auto",
        split: bool = False, job_cells: bool = True) -> ExtendResults:
    """Run the jobs idx (default: all) on the GPU; rows of the result follow idx.

    mode: "auto" (each job on the smallest ring kernel that holds its band, else the thread kernel),
    "warp" (ring kernels of a whole warp per job only) or "thread" (every job on the thread kernel),
    for testing. Timings of the last call are in last_stats (t_prep: host work until the first
    launch, t_h2d, t_kernel, t_d2h, t_total); split=True uploads everything before the first kernel
    starts, so t_kernel is the kernels alone (the default overlaps each chunk's kernels with the
    next chunks' uploads). DP cells: last_stats["cells_total"], and per job last_stats["cells"]
    when job_cells (job_cells=False sums them on the device and reads back one number).
    """
    import cupy

    t_start = time.perf_counter()
    budget = default_gpu_mem() if gpu_mem is None else int(gpu_mem)
    if idx is not None:
        idx = np.asarray(idx, np.int64)
    sub = jobs if idx is None or (len(idx) == jobs.n and np.array_equal(idx, np.arange(jobs.n))) else jobs.take(idx)
    n = sub.n
    stats = {"jobs": n, "chunks": 0, "classes": {}, "direct": False}
    if n == 0:
        last_stats.clear()
        last_stats.update(stats, t_total=0.0, cells_total=0)
        return ExtendResults.empty(0)
    mat_m, mat_max, mrow, mats, mat_off = _mat_stats(sub)
    # upload chunks: contiguous job ranges of about CHUNK_BYTES of sequence (cut by target bytes); the
    # chunk with the job of most rows goes first (a long job's time is its rows times the row latency)
    tb = int(sub.toff[-1])
    nch = int(min(MAX_CHUNKS, max(1, (tb + int(sub.qoff[-1])) // CHUNK_BYTES)))
    cut = np.searchsorted(sub.toff, np.arange(1, nch, dtype=np.int64) * tb // nch) if nch > 1 else np.zeros(0, np.int64)
    bounds = np.unique(np.concatenate([[0], cut, [n]])).astype(np.int64)
    nch = len(bounds) - 1
    first = int(np.searchsorted(bounds, int(np.argmax(np.diff(sub.toff))), side="right")) - 1
    up_order = np.r_[first, np.delete(np.arange(nch), first)]   # chunks in upload order
    rank = np.empty(nch, np.int32)
    rank[up_order] = np.arange(nch)
    # the ring classes that can have jobs: a job's class is at most the first ring holding its row
    qlen = np.diff(sub.qoff)
    qmax = int(qlen.max())
    top = 0 if mode == "thread" else next((i + 1 for i, (g, c) in enumerate(RING)
                                            if (mode == "auto" or g == 32) and qmax + 1 <= g * c), len(RING))
    mod = load_module("ksw_extend2.cu")
    fns = [mod.get_function("ksw_extend2_ring%dx%d" % r) for r in RING]
    k_plan, k_scan, k_order = (mod.get_function("ksw_extend2_" + k) for k in ("plan", "scan", "order"))
    main, copy_st = stream(("extend2", "main")), stream(("extend2", "copy"))
    i32 = np.int32
    nseg = nch * NCLS * NSIZE
    used = [main]
    seq = Staging([sub.qseq, sub.tseq], copy_st)
    stats["direct"] = all(seq.direct)   # sequences sent from the jobs' page-locked arrays
    try:
        # a parameter the same for all jobs goes up as one value (bit f of uni; normally all but h0),
        # unless it is page-locked: then it goes up whole, in a DMA (no pass over it on the host)
        prm = [sub.w, sub.end_bonus, sub.zdrop, sub.o_del, sub.e_del, sub.o_ins, sub.e_ins, sub.mat_id]
        uni = 0
        for f, a in enumerate(prm):
            if len(a) and not is_pinned(a) and (a == a[0]).all():
                uni |= 1 << f
                prm[f] = a[:1]
        small = [sub.qoff, sub.toff, sub.h0, *prm, mat_max, mat_m, bounds, rank, mrow.reshape(-1)]
        up = Staging(small, main)
        up.send_span(0, len(small), main)   # the per-job arrays: one DMA on the planning stream
        d_qoff, d_toff = up.view(0, np.int64), up.view(1, np.int64)
        d_h0, d_w, d_eb, d_zd, d_od, d_ed, d_oi, d_ei, d_mid, d_mmax, d_mm = (up.view(i, i32) for i in range(2, 13))
        d_bounds, d_rank, d_mrow = up.view(13, np.int64), up.view(14, i32), up.view(15, np.uint32)
        d_q, d_t = seq.view(0, np.uint8), seq.view(1, np.uint8)
        with main:   # plan, segment starts, launch order: no read-back before the ring kernels start
            d_prm = cupy.empty(n * N_PRM2, i32)
            d_seg = cupy.empty(n, i32)
            d_hist = cupy.zeros(nseg + 1, np.uint32)
            d_start, d_cursor = cupy.empty(nseg + 1, np.uint32), cupy.empty(nseg, np.uint32)
            d_order = cupy.empty(n, i32)
            d_res = cupy.empty(n * 6, i32)
            d_cells = cupy.empty(n, np.int64)
            grid = ((n + 255) // 256,)
            k_plan(grid, (256,), (i32(n), d_qoff, d_toff, d_h0, d_w, d_eb, d_zd, d_od, d_ed, d_oi, d_ei, d_mid, d_mmax,
                                  d_mm, i32(uni), i32(len(sub.mats)), np.int64(budget // 8), i32(MODES[mode]), i32(nch),
                                  d_bounds, d_rank, d_prm, d_seg, d_hist))
            k_scan((1,), (32,), (i32(nseg), d_hist, d_start, d_cursor))
            k_order(grid, (256,), (i32(n), d_seg, d_cursor, d_order))
            ev_order = main.record()
        chunk_futs, chunk_ev = [], []
        for ch in up_order:   # then the sequences (copy threads, or DMAs at once if page-locked): the plan runs meanwhile
            f0 = len(seq.futs)
            a, b = int(bounds[ch]), int(bounds[ch + 1])
            seq.send(0, int(sub.qoff[a]), int(sub.qoff[b]))
            seq.send(1, int(sub.toff[a]), int(sub.toff[b]))
            chunk_futs.append(seq.futs[f0:])
            chunk_ev.append(copy_st.record() if len(seq.futs) == f0 else None)
        common = (d_q, d_qoff, d_t, d_toff, d_prm, d_mrow, d_res, i32(n), d_cells)
        # the results' host memory (page-locked, pooled): the returned arrays are views of it
        out = pooled_pinned(n * 32)
        out_ptr = out.ctypes.data
        if split:
            seq.ready().synchronize()
        stats["t_prep"] = time.perf_counter() - t_start
        t0 = time.perf_counter()
        done: list = [[] for _ in range(nch)]   # per chunk: the streams of its ring kernels
        for r in range(nch):
            for f in chunk_futs[r]:
                f.result()
            ev = chunk_ev[r] or copy_st.record()   # after this chunk's pieces (and any others enqueued by now)
            stats["chunks"] += 1
            ch, base = up_order[r], r * NCLS * NSIZE
            nj = int(bounds[ch + 1] - bounds[ch])
            # larger rings first; within a class, larger jobs first (segments in that order); each class
            # on a stream of its own, so no kernel waits for the longest job of another; grids for all
            # the chunk's jobs (a class's kernel reads its jobs' range from d_start)
            for c in reversed(range(1, top + 1)):
                st = stream(("extend2", r, c))
                st.wait_event(ev)
                st.wait_event(ev_order)
                used.append(st)
                with st:
                    _launch_ring(fns[c - 1], RING[c - 1][0], nj, (d_order, d_start, i32(base + c * NSIZE)) + common)
                done[r].append(st)
        t_h2d = time.perf_counter() - t0
        t_k = time.perf_counter()
        h_hist = cupy.asnumpy(d_hist, stream=main)   # (the plan is long done)
        if h_hist[nseg]:   # the cheap part of supports(), checked on the device
            raise ValueError("run() got jobs that supports() rejects; route them to the CPU")
        hist = h_hist[:nseg]
        seg_start = np.concatenate([[0], np.cumsum(hist, dtype=np.int64)])
        cls_of = (np.arange(nseg) // NSIZE) % NCLS
        for c in range(NCLS):
            cnt = int(hist[cls_of == c].sum())
            if cnt:
                stats["classes"]["thread" if c == 0 else "ring%dx%d" % RING[c - 1]] = cnt
        thread_jobs = [(int(seg_start[r * NCLS * NSIZE]), int(seg_start[r * NCLS * NSIZE + NSIZE])) for r in range(nch)]
        thread_jobs = [(a, b) for a, b in thread_jobs if b > a]
        if thread_jobs:
            st = stream(("extend2", "thread"))
            st.wait_event(copy_st.record())
            st.wait_event(ev_order)
            used.append(st)
            with st:
                sel = np.concatenate([cupy.asnumpy(d_order[a:b]) for a, b in thread_jobs]).astype(np.int64)
                _run_thread(mod, sub, sel, qlen, budget, (mats, mat_off, mat_m), d_q, d_qoff, d_t,
                            d_toff, d_res, d_cells)
            done = [d + [st] for d in done]
        # each chunk's results come back as soon as its kernels are done (a stream per chunk). The
        # events and copies are enqueued after every launch: streams share the GPU's few hardware
        # queues, and an event record or a copy that waits for the longest job must not hold up a
        # kernel queued behind it (ONT dump: kernels 50-60 ms instead of 30)
        for r in reversed(range(nch)):
            ds = stream(("extend2", "d2h", r))
            for st in done[r]:
                ds.wait_event(st.record())
            used.append(ds)
            ch = up_order[r]
            _results_back(out_ptr, d_res, d_cells if job_cells else None, n, int(bounds[ch]), int(bounds[ch + 1]), ds)
        for s in used:
            s.synchronize()
        stats["t_kernel"] = time.perf_counter() - t_k
    finally:
        seq.close()
        for s in [copy_st] + used:   # (after an error too: no kernel may outlive its buffers)
            s.synchronize()
        release()   # (the staging buffers: no DMA reads them any more)
    t_d = time.perf_counter()
    if not job_cells:
        with main:
            total = d_cells.sum()
        cupy.cuda.runtime.memcpyAsync(out_ptr + n * 24, total.data.ptr, 8, 2, main.ptr)   # device to host
    main.synchronize()
    h = out[:n * 24].view(i32).reshape(6, n)   # field-major: each field contiguous
    cells = out[n * 24:n * 24 + (n * 8 if job_cells else 8)].view(np.int64)
    stats["cells_total"] = int(cells.sum())
    if job_cells:
        stats["cells"] = cells.copy()   # (last_stats must not hold the results' memory)
    res = ExtendResults(*h)
    stats["t_h2d"] = t_h2d
    stats["t_d2h"] = time.perf_counter() - t_d
    stats["t_total"] = time.perf_counter() - t_start
    last_stats.clear()
    last_stats.update(stats)
    return res


def _results_back(out_ptr, d_res, d_cells, n, a, b, st) -> None:
    """D2H on stream st of jobs [a, b)'s results (six field-major int32 rows of n) and, if d_cells is
    given, their cells, into the host buffer at out_ptr (results, then cells from byte n * 24)."""
    import cupy

    if b <= a:
        return
    for f in range(6):
        o = (f * n + a) * 4
        cupy.cuda.runtime.memcpyAsync(out_ptr + o, d_res.data.ptr + o, (b - a) * 4, 2, st.ptr)   # device to host
    if d_cells is not None:
        cupy.cuda.runtime.memcpyAsync(out_ptr + n * 24 + a * 8, d_cells.data.ptr + a * 8, (b - a) * 8, 2, st.ptr)


def _run_thread(mod, sub, jobs_t, qlen, budget, matrices, d_q, d_qoff, d_t, d_toff, d_res, d_cells) -> None:
    """The thread kernel over jobs_t (on the current stream): 32 jobs of similar size per warp, their row
    buffers interleaved in an arena cut into chunks that fit the memory budget."""
    import cupy

    fn = mod.get_function("ksw_extend2_thread")
    mats, mat_off, mat_m = matrices
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
            np.int32(sub.n), d_cells))
        cupy.cuda.get_current_stream().synchronize()
        del d_eh, d_order, d_off
        u0 = u1


__all__ = ["supports", "run", "pin", "REASONS", "REJECT_INPUT", "REJECT_GAP", "REJECT_RANGE", "REJECT_MEMORY"]
