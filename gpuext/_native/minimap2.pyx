# cython: language_level=3, boundscheck=False, wraparound=False
"""gpuext's native module: the patched minimap2 2.31 (see patches/) plus gpuext's C glue.

Neighbours: gpuext/cli/map.py runs the command line through `run_cli`; gpuext/backends/cpu.py runs
the stock ksw2 code over a JobBatch through `ksw_batch`. Nothing here knows about GPUs.
"""
from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint32_t
from libc.stdlib cimport malloc, free, calloc

import numpy as np

cdef extern from "gx_glue.h":
    int gx_cli_run(int argc, char **argv, const char *sam_hdr_extra) nogil
    void gx_set_provider(int provider)
    ctypedef struct gx_counters_t:
        int64_t jobs[3]
        int64_t cells[3]
    void gx_get_counters(gx_counters_t *c)
    void gx_reset_counters()
    int64_t gx_band_cells(int qlen, int tlen, int w)
    ctypedef struct gx_batch_t:
        int64_t n
        const uint8_t *qseq
        const uint8_t *tseq
        const int64_t *qoff
        const int64_t *toff
        const int8_t *kernel
        const int32_t *w
        const int32_t *zdrop
        const int32_t *end_bonus
        const int32_t *flag
        const int8_t *mat
        int q, e, q2, e2
        int32_t *max
        int32_t *max_q
        int32_t *max_t
        int32_t *mqe
        int32_t *mqe_t
        int32_t *mte
        int32_t *mte_q
        int32_t *score
        int32_t *n_cigar
        int8_t *zdropped
        int8_t *reach_end
        uint32_t **cigar
    void gx_batch_run(gx_batch_t *b, int n_threads) nogil
    void gx_batch_take_cigars(gx_batch_t *b, const int64_t *coff, uint32_t *out) nogil

cdef extern from "minimap.h":
    const char *MM_VERSION

PROVIDERS = {"stock": 0, "cpu": 1}
KERNELS = ("extd2", "extz2", "exts2")

minimap2_version = MM_VERSION.decode()


def run_cli(argv, sam_hdr_extra=None):
    """Run minimap2's command line (argv[0] is the program name) in this process; return its status.

    Output goes to C stdout (or the -o file, written atomically); logs to stderr. minimap2 may call
    exit() on fatal errors, which ends the process.
    """
    cdef int argc = len(argv), i, ret
    cdef char **c_argv = <char**>calloc(argc + 1, sizeof(char*))
    encoded = [a.encode() if isinstance(a, str) else bytes(a) for a in argv]
    extra = sam_hdr_extra.encode() if sam_hdr_extra else None
    cdef const char *c_extra = NULL
    if extra is not None:
        c_extra = extra
    try:
        for i in range(argc):
            c_argv[i] = encoded[i]
        with nogil:
            ret = gx_cli_run(argc, c_argv, c_extra)
    finally:
        free(c_argv)
    return ret


def set_provider(name):
    """Choose who computes minimap2's ksw2 calls: 'stock' (no hook) or 'cpu' (the hook, stock code)."""
    gx_set_provider(PROVIDERS[name])


def counters():
    """Jobs and DP cells seen by the hook so far, per kernel: {kernel: (jobs, cells)}."""
    cdef gx_counters_t c
    gx_get_counters(&c)
    return {KERNELS[k]: (c.jobs[k], c.cells[k]) for k in range(3)}


def reset_counters():
    gx_reset_counters()


def band_cells(int qlen, int tlen, int w):
    return gx_band_cells(qlen, tlen, w)


def ksw_batch(const uint8_t[::1] qseq, const int64_t[::1] qoff, const uint8_t[::1] tseq, const int64_t[::1] toff,
              const int8_t[::1] kernel, const int32_t[::1] w, const int32_t[::1] zdrop,
              const int32_t[::1] end_bonus, const int32_t[::1] flag, const int8_t[::1] mat,
              int q, int e, int q2, int e2, int n_threads=1):
    """Run the stock ksw2 code on every job (flat arrays as in gpuext/engine/jobs.py); GIL released.

    Returns a dict of result arrays: the ksw_extz_t fields, 'coff' (int64[n+1]) and 'cigar' (uint32).
    """
    cdef int64_t n = w.shape[0]
    if qoff.shape[0] != n + 1 or toff.shape[0] != n + 1 or kernel.shape[0] != n or zdrop.shape[0] != n \
            or end_bonus.shape[0] != n or flag.shape[0] != n:
        raise ValueError("job arrays have inconsistent lengths")
    if mat.shape[0] != 25:
        raise ValueError("the score matrix must have 25 entries")
    if n > 0 and (qoff[n] > qseq.shape[0] or toff[n] > tseq.shape[0]):
        raise ValueError("sequence offsets run past the sequence buffers")
    out = {name: np.empty(n, dtype=np.int32) for name in
           ("max", "max_q", "max_t", "mqe", "mqe_t", "mte", "mte_q", "score", "n_cigar")}
    out["zdropped"] = np.empty(n, dtype=np.int8)
    out["reach_end"] = np.empty(n, dtype=np.int8)
    cdef int32_t[::1] o_max = out["max"], o_max_q = out["max_q"], o_max_t = out["max_t"]
    cdef int32_t[::1] o_mqe = out["mqe"], o_mqe_t = out["mqe_t"], o_mte = out["mte"], o_mte_q = out["mte_q"]
    cdef int32_t[::1] o_score = out["score"], o_n_cigar = out["n_cigar"]
    cdef int8_t[::1] o_zd = out["zdropped"], o_re = out["reach_end"]
    cdef gx_batch_t b
    b.n = n
    if n == 0:
        out["coff"] = np.zeros(1, dtype=np.int64)
        out["cigar"] = np.zeros(0, dtype=np.uint32)
        del out["n_cigar"]
        return out
    b.qseq = &qseq[0] if qseq.shape[0] else NULL
    b.tseq = &tseq[0] if tseq.shape[0] else NULL
    b.qoff = &qoff[0]; b.toff = &toff[0]; b.kernel = &kernel[0]
    b.w = &w[0]; b.zdrop = &zdrop[0]; b.end_bonus = &end_bonus[0]; b.flag = &flag[0]; b.mat = &mat[0]
    b.q = q; b.e = e; b.q2 = q2; b.e2 = e2
    b.max = &o_max[0]; b.max_q = &o_max_q[0]; b.max_t = &o_max_t[0]
    b.mqe = &o_mqe[0]; b.mqe_t = &o_mqe_t[0]; b.mte = &o_mte[0]; b.mte_q = &o_mte_q[0]
    b.score = &o_score[0]; b.n_cigar = &o_n_cigar[0]; b.zdropped = &o_zd[0]; b.reach_end = &o_re[0]
    b.cigar = <uint32_t**>calloc(n, sizeof(uint32_t*))
    try:
        with nogil:
            gx_batch_run(&b, n_threads)
        coff = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(out["n_cigar"], out=coff[1:])
        cigar = np.empty(coff[n], dtype=np.uint32)
        cigar_view = np.concatenate([cigar, np.zeros(1, dtype=np.uint32)])  # never empty
        _take(&b, coff, cigar_view)
        out["coff"] = coff
        out["cigar"] = cigar_view[:coff[n]].copy()
        del out["n_cigar"]
        return out
    finally:
        free(b.cigar)


cdef _take(gx_batch_t *b, const int64_t[::1] coff, uint32_t[::1] cigar):
    with nogil:
        gx_batch_take_cigars(b, &coff[0], &cigar[0])
