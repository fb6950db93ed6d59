"""Launcher of kernels/ksw_extz2.cu: minimap2's ksw_extz2_sse (one affine gap cost) over a JobBatch, bit-exact.

minimap2 calls ksw_extz2_sse instead of ksw_extd2_sse when both gap costs are the same (`-O4 -E2`, say;
align.c's mm_align_pair). Its int8 arithmetic differs from ksw_extd2's with q2 = q, e2 = e (other offsets,
an unsigned maximum and a cap at mat[0] + 2(q+e)), so it has a kernel of its own, which follows
ksw2_extz2_sse.c lane for lane: a block per job, ksw2's arrays in device memory (see the kernel file),
32, 128 or 512 threads by the width of the job's band (THREADS). No preset uses it: it is written for
exactness first and only sized, not tuned.

`supports(batch)` gives per job 0 (taken) or a REJECT_* code of ksw_extd2's (`REASONS`); `run(batch,
job_idx)` returns the ResultBatch of the jobs job_idx (rows in that order), CIGARs included. Jobs go to
the device in chunks that fit the memory budget (ksw_extd2.default_gpu_mem); the direction bytes stay
there: the backtrack and the CIGAR packing run on the GPU.
Neighbours: gpuext/backends/__init__.py (CudaBackend sends it the batch's extz2 jobs), ksw_extd2.py.
"""
from __future__ import annotations

import numpy as np

from ...engine.jobs import KERNEL_EXTZ2, KSW_EZ_SCORE_ONLY, RESULT_FIELDS, JobBatch, ResultBatch
from .ksw_extd2 import REASONS, REJECT_KERNEL, REJECT_MEMORY, _bounds, _reset_results, default_gpu_mem
from .loader import load_module
from .staging import stream

WARPS = 4            # jobs per block of ksw_extz2_pack (Z2_WARPS in the kernel)
NFIELDS = 11         # the ksw_extz_t fields (ResultBatch order), then the CIGAR length
THREADS = ((256, 32), (2048, 128), (None, 512))   # threads per job's block by ksw2's n_col * 16 (its widest
                                                  # aligned band): up to 256, up to 2048, wider

last_stats: dict = {}


def _job_bytes(qlen: np.ndarray, tlen: np.ndarray, w: np.ndarray, flag: np.ndarray) -> tuple:
    """Device bytes per job: state (u y s, x v twice, int8; H int32; off off_end int32), directions,
    CIGAR words; and ksw2's n_col * 16."""
    q, t = qlen.astype(np.int64), tlen.astype(np.int64)
    t16 = (t + 15) // 16 * 16
    state = (11 * t16 + 8 * np.maximum(q + t - 1, 0) + 15) // 16 * 16
    dir_ub, width = _bounds(q, t, w)   # ksw2_extz2_sse.c:75-76, 92 allocate as ksw_extd2_sse does
    return state, np.where((flag & KSW_EZ_SCORE_ONLY) != 0, 0, dir_ub), q + t + 1, width


def supports(batch: JobBatch, gpu_mem: int | None = None) -> np.ndarray:
    """Reason code per job (int8): 0 when this kernel takes it, else a REJECT_* of ksw_extd2's."""
    budget = default_gpu_mem() if gpu_mem is None else int(gpu_mem)
    state, dirb, cig, _ = _job_bytes(batch.qlen(), batch.tlen(), batch.w, batch.flag)
    out = np.zeros(batch.n, np.int8)
    out[state + dirb + 4 * cig > budget] = REJECT_MEMORY
    out[batch.kernel != KERNEL_EXTZ2] = REJECT_KERNEL
    return out


def _chunks(need: np.ndarray, budget: int) -> list[tuple[int, int]]:
    """Runs [a, b) of consecutive jobs whose bytes together fit the budget (at least one job each)."""
    csum, out, a = np.cumsum(need), [], 0
    while a < len(need):
        base = int(csum[a - 1]) if a else 0
        b = max(a + 1, int(np.searchsorted(csum, base + budget, side="right")))
        out.append((a, b))
        a = b
    return out


def warm_up() -> None:
    """The module built or loaded from CuPy's cache and its kernels looked up (CudaBackend's set-up thread;
    CUDA loads a kernel when it is first looked up)."""
    mod = load_module("ksw_extz2.cu")
    mod.get_function("ksw_extz2_dp"), mod.get_function("ksw_extz2_pack")


def run(batch: JobBatch, job_idx=None, gpu_mem: int | None = None) -> ResultBatch:
    """Run the jobs job_idx (default: all) of the batch; rows of the result follow job_idx."""
    import cupy

    if job_idx is not None:
        batch = batch.subset(np.asarray(job_idx, np.int64))
    m = batch.n
    s = batch.scoring
    mat = np.ascontiguousarray(s.mat, np.int8).reshape(-1)
    if m == 0 or -int(mat[1:].min()) > 2 * (int(s.q) + int(s.e)):   # ksw2_extz2_sse.c:89: reset values
        last_stats.clear()
        last_stats.update(jobs=m, chunks=0)
        return ResultBatch(coff=np.zeros(m + 1, np.int64), cigar=np.zeros(0, np.uint32), **_reset_results(m))
    budget = default_gpu_mem() if gpu_mem is None else int(gpu_mem)
    state, dirb, cig, width = _job_bytes(batch.qlen(), batch.tlen(), batch.w, batch.flag)
    nthreads = np.full(m, THREADS[-1][1], np.int32)
    for lim, nt in reversed(THREADS[:-1]):
        nthreads[width <= lim] = nt
    mod = load_module("ksw_extz2.cu")
    k_dp, k_pack = mod.get_function("ksw_extz2_dp"), mod.get_function("ksw_extz2_pack")
    i32, i64 = np.int32, np.int64
    # every copy to the device, the CIGAR packing and the read-backs on one stream of this thread (main);
    # each DP launch on a stream of its own waits for main's copies by an event (the streams are
    # non-blocking: a kernel on one of them does not wait for copies on any other stream, the legacy
    # default one included)
    main = stream("extz2")
    with main:
        d_q, d_t = cupy.asarray(batch.qseq), cupy.asarray(batch.tseq)
        d_qoff, d_toff = cupy.asarray(np.asarray(batch.qoff, i64)), cupy.asarray(np.asarray(batch.toff, i64))
        d_w, d_zd, d_eb, d_fl = (cupy.asarray(np.asarray(a, i32)) for a in (batch.w, batch.zdrop, batch.end_bonus,
                                                                            batch.flag))
        d_mat = cupy.asarray(mat)
    parts, blocks = [], {}   # blocks: jobs per block size
    chunks = _chunks(state + dirb + 4 * cig, budget)
    for a, b in chunks:
        n = b - a
        offs = [np.r_[0, np.cumsum(x[a:b])].astype(i64) for x in (state, dirb, cig)]
        with main:
            d_work = cupy.empty(max(int(offs[0][-1]), 16), np.uint8)
            d_dir = cupy.empty(max(int(offs[1][-1]), 16), np.uint8)
            d_cig = cupy.empty(max(int(offs[2][-1]), 1), np.uint32)
            d_off = [cupy.asarray(o[:-1]) for o in offs]
            d_res = cupy.empty(NFIELDS * n, i32)
            ev_in = main.record()
        nt = nthreads[a:b]
        for _, t in reversed(THREADS):   # a launch per block size, on streams of their own, the widest first
            jl = np.flatnonzero(nt == t).astype(i32)
            if len(jl):
                blocks[t] = blocks.get(t, 0) + len(jl)
                st = stream(("extz2", t))
                with st:
                    st.wait_event(ev_in)
                    k_dp((len(jl),), (int(t),), (cupy.asarray(jl), i32(a), i32(n), d_q, d_qoff, d_t, d_toff, d_w,
                                                 d_zd, d_eb, d_fl, d_mat, i32(s.q), i32(s.e), d_off[0], d_work,
                                                 d_off[1], d_dir, d_off[2], d_cig, d_res))
        for _, t in THREADS:
            main.wait_event(stream(("extz2", t)).record())
        grid = ((n + WARPS - 1) // WARPS,)
        with main:
            h = cupy.asnumpy(d_res, stream=main).reshape(NFIELDS, n)
            coff = np.r_[0, np.cumsum(h[10])].astype(i64)
            d_out = cupy.empty(max(int(coff[-1]), 1), np.uint32)
            k_pack(grid, (32 * WARPS,), (i32(n), d_off[2], d_cig, d_res, cupy.asarray(coff[:-1]), d_out))
            cigar = cupy.asnumpy(d_out, stream=main)[:int(coff[-1])]
        fields = {name: h[i].astype(np.int8 if i >= 8 else i32) for i, name in enumerate(RESULT_FIELDS)}
        parts.append((np.arange(a, b), ResultBatch(coff=coff, cigar=cigar, **fields)))
        del d_work, d_dir, d_cig
    last_stats.clear()
    last_stats.update(jobs=m, chunks=len(chunks), blocks=blocks)
    return ResultBatch.assemble(m, parts)


__all__ = ["supports", "run", "REASONS", "REJECT_KERNEL", "REJECT_MEMORY"]
