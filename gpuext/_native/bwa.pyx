# cython: language_level=3, boundscheck=False, wraparound=False
"""BWA 0.7.18's own ksw_extend2 (ksw.c from build/patched/bwa-0.7.18) over a batch of jobs.

The CPU reference of the BWA side: `extend2(jobs, idx=None, n_threads=1)` runs the jobs of a
gpuext.bwa.dump.ExtendJobs on n_threads POSIX threads with the GIL released and returns an
ExtendResults (rows follow idx); `cells(...)` counts the DP cells of each job (statistics). Neighbours: gpuext/_native/gx_bwa.c (the threads),
gpuext/bwa/dump.py (the arrays), gpuext/backends/cuda/ksw_extend2.py (the GPU counterpart).
"""
from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t

import numpy as np

cdef extern from "gx_bwa.h":
    ctypedef struct gx_bwa_batch_t:
        int64_t n
        const int64_t *idx
        const uint8_t *qseq
        const uint8_t *tseq
        const int64_t *qoff
        const int64_t *toff
        const int32_t *h0
        const int32_t *w
        const int32_t *end_bonus
        const int32_t *zdrop
        const int32_t *o_del
        const int32_t *e_del
        const int32_t *o_ins
        const int32_t *e_ins
        const int32_t *mat_id
        const int8_t *mats
        const int64_t *mat_off
        const int32_t *mat_m
        int32_t *score
        int32_t *qle
        int32_t *tle
        int32_t *gtle
        int32_t *gscore
        int32_t *max_off
        int64_t *cells
    void gx_bwa_extend2(const gx_bwa_batch_t *b, int n_threads) nogil
    void gx_bwa_cells(const gx_bwa_batch_t *b, int n_threads) nogil


def check_jobs(jobs, idx):
    """Raise ValueError for jobs ksw_extend2 cannot take (it asserts h0 > 0, writes eh[1] and indexes
    its query profile by base): qlen < 1, h0 < 1, an unknown matrix or a base code >= m."""
    qlen, tlen = jobs.qlen()[idx], jobs.tlen()[idx]
    if len(idx) == 0:
        return
    if qlen.min() < 1 or tlen.min() < 0 or jobs.h0[idx].min() < 1:
        raise ValueError("ksw_extend2 needs qlen >= 1, tlen >= 0 and h0 >= 1")
    if jobs.mat_id[idx].min() < 0 or jobs.mat_id[idx].max() >= len(jobs.mats):
        raise ValueError("job with an unknown scoring matrix")
    m = jobs.m()
    for seq, off in ((jobs.qseq, jobs.qoff), (jobs.tseq, jobs.toff)):
        if len(seq):
            big = np.maximum.reduceat(seq, np.minimum(off[:len(off) - 1], len(seq) - 1)) if len(off) > 1 else seq[:0]
            lens = np.diff(off)
            if np.any((big[idx] >= m[idx]) & (lens[idx] > 0)):
                raise ValueError("base code >= m")


def extend2(jobs, idx=None, int n_threads=1, bint check=True):
    """Run BWA's ksw_extend2 on jobs idx (default: all) of an ExtendJobs; returns an ExtendResults.

    check=False skips check_jobs (for callers that validated the jobs already, e.g. benchmarks).
    """
    return _run(jobs, idx, n_threads, False, check)


def cells(jobs, idx=None, int n_threads=1):
    """DP cells per job (int64; the sum of end - beg over the rows ksw_extend2 runs), for statistics."""
    return _run(jobs, idx, n_threads, True, True)


cdef _run(jobs, idx, int n_threads, bint count_only, bint check):
    from ..bwa.dump import ExtendResults

    cdef int64_t[::1] v_idx = np.arange(jobs.n, dtype=np.int64) if idx is None else np.ascontiguousarray(idx, np.int64)
    if check:
        check_jobs(jobs, np.asarray(v_idx))
    n = v_idx.shape[0]
    res = ExtendResults.empty(n)
    ncell = np.zeros(max(n, 1), np.int64)
    mats = np.concatenate(jobs.mats) if jobs.mats else np.zeros(1, np.int8)
    mat_m = np.array([int(round(np.sqrt(len(x)))) for x in jobs.mats] or [0], np.int32)
    mat_off = np.zeros(max(len(jobs.mats), 1), np.int64)
    if jobs.mats:
        mat_off[1:] = np.cumsum([len(x) for x in jobs.mats])[:len(jobs.mats) - 1]
    cdef gx_bwa_batch_t b
    cdef const uint8_t[::1] qseq = jobs.qseq if len(jobs.qseq) else np.zeros(1, np.uint8)
    cdef const uint8_t[::1] tseq = jobs.tseq if len(jobs.tseq) else np.zeros(1, np.uint8)
    cdef const int64_t[::1] qoff = jobs.qoff, toff = jobs.toff, v_mat_off = mat_off
    cdef const int32_t[::1] h0 = jobs.h0, w = jobs.w, eb = jobs.end_bonus, zd = jobs.zdrop
    cdef const int32_t[::1] od = jobs.o_del, ed = jobs.e_del, oi = jobs.o_ins, ei = jobs.e_ins
    cdef const int32_t[::1] mid = jobs.mat_id, v_mat_m = mat_m
    cdef const int8_t[::1] v_mats = mats
    cdef int32_t[::1] score = res.score, qle = res.qle, tle = res.tle, gtle = res.gtle
    cdef int32_t[::1] gscore = res.gscore, max_off = res.max_off
    cdef int64_t[::1] v_cells = ncell
    if n == 0:
        return ncell[:0] if count_only else res
    b.n = n
    b.idx = &v_idx[0]
    b.qseq, b.tseq, b.qoff, b.toff = &qseq[0], &tseq[0], &qoff[0], &toff[0]
    b.h0, b.w, b.end_bonus, b.zdrop = &h0[0], &w[0], &eb[0], &zd[0]
    b.o_del, b.e_del, b.o_ins, b.e_ins = &od[0], &ed[0], &oi[0], &ei[0]
    b.mat_id, b.mats, b.mat_off, b.mat_m = &mid[0], &v_mats[0], &v_mat_off[0], &v_mat_m[0]
    b.score, b.qle, b.tle, b.gtle, b.gscore, b.max_off = &score[0], &qle[0], &tle[0], &gtle[0], &gscore[0], &max_off[0]
    b.cells = &v_cells[0]
    if count_only:
        with nogil:
            gx_bwa_cells(&b, n_threads)
        return ncell
    with nogil:
        gx_bwa_extend2(&b, n_threads)
    return res
