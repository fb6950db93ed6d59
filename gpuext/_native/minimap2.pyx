# cython: language_level=3, boundscheck=False, wraparound=False
"""gpuext's native module: the patched minimap2 2.31 (see patches/) plus gpuext's C glue.

Neighbours: gpuext/cli/map.py runs the command line through `run_cli`; gpuext/engine/rounds.py maps
each batch in rounds (`install_engine`, `map_round`, `engine_pending`, `engine_import`);
gpuext/backends/cpu.py runs the stock ksw2 code over a JobBatch through `ksw_batch`. Nothing here
knows about GPUs.
"""
from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint32_t
from libc.stdlib cimport malloc, free, calloc

# (NumPy is imported by the functions that use it: `gpuext map` starts minimap2 before NumPy has loaded)

ctypedef int (*gx_index_loaded_f)() noexcept

cdef extern from "gx_glue.h":
    int gx_cli_run(int argc, char **argv, const char *sam_hdr_extra, const char *output_override,
                   gx_index_loaded_f index_loaded) nogil
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

    ctypedef struct gx_round_stats_t:
        int64_t hits, misses, new_jobs, new_cells, collisions
        int64_t inline_final_jobs, inline_final_cells, inline_splice_jobs, inline_splice_cells
    ctypedef struct gx_table_t:
        pass
    void gx_engine_install(int on)
    gx_table_t *gx_table_new()
    void gx_table_free(gx_table_t *t)
    void gx_engine_round(gx_table_t *t, int n_threads, void *batch, int mode, gx_round_stats_t *st) nogil
    int gx_table_scoring(const gx_table_t *t, int8_t *mat, int *q, int *e, int *q2, int *e2)
    int64_t gx_table_pending(const gx_table_t *t, int64_t *ids, int64_t max_ids, int64_t *seq_len)
    void gx_table_export(const gx_table_t *t, int64_t n, const int64_t *ids, uint8_t *qseq, int64_t *qoff,
                         uint8_t *tseq, int64_t *toff, int8_t *kernel, int32_t *w, int32_t *zdrop,
                         int32_t *end_bonus, int32_t *flag)
    void gx_table_import(gx_table_t *t, int64_t n, const int64_t *ids, const int32_t **fields, const int8_t *zdropped,
                         const int8_t *reach_end, const int64_t *coff, const uint32_t *cigar)
    int64_t gx_table_predict(gx_table_t *t, int n_threads, int64_t *cells) nogil
    void gx_fatal() nogil

cdef extern from "mmhook.h":
    void (*mm_map_batch_hook)(int n_threads, void *batch, int n_seq, int step) noexcept nogil
    int mm_map_batch_steps
    void mm_map_batch_round(int n_threads, void *batch) nogil
    int64_t mm_map_batch_bases(const void *batch)

cdef extern from "minimap.h":
    const char *MM_VERSION


minimap2_version = MM_VERSION.decode()


_index_loaded_py = None   # run_cli's index_loaded, while it runs


cdef int _index_loaded() noexcept with gil:
    """mm_cli_index_loaded: run_cli's index_loaded; non-zero (end the run) when it returns true or raises."""
    try:
        return 1 if _index_loaded_py() else 0
    except BaseException as e:
        import sys

        sys.stderr.write(f"[E::gpuext] {type(e).__name__}: {e}\n")
        return 1


def run_cli(argv, sam_hdr_extra=None, output_override=None, index_loaded=None):
    """Run minimap2's command line (argv[0] is the program name) in this process; return its status.

    Output goes to C stdout, or to the -o file (written under a temporary name, renamed on success);
    output_override names the file -o output goes to instead of -o's argument (which stays in the
    @PG line). Logs go to stderr. minimap2 may call exit() on fatal errors, ending the process.
    index_loaded, if given, is called (in this thread) each time minimap2 has loaded its index, before
    it writes anything: a true return ends the run with status 1 and nothing written.
    """
    global _index_loaded_py
    cdef int argc = len(argv), i, ret
    cdef char **c_argv = <char**>calloc(argc + 1, sizeof(char*))
    encoded = [a.encode() if isinstance(a, str) else bytes(a) for a in argv]
    extra = sam_hdr_extra.encode() if sam_hdr_extra else None
    override = output_override.encode() if output_override else None
    cdef const char *c_extra = NULL
    cdef const char *c_override = NULL
    cdef gx_index_loaded_f c_loaded = NULL
    if extra is not None:
        c_extra = extra
    if override is not None:
        c_override = override
    if index_loaded is not None:
        _index_loaded_py = index_loaded
        c_loaded = _index_loaded
    try:
        for i in range(argc):
            c_argv[i] = encoded[i]
        with nogil:
            ret = gx_cli_run(argc, c_argv, c_extra, c_override, c_loaded)
    finally:
        free(c_argv)
        _index_loaded_py = None
    return ret


def band_cells(int qlen, int tlen, int w):
    return gx_band_cells(qlen, tlen, w)


def ksw_batch(const uint8_t[::1] qseq, const int64_t[::1] qoff, const uint8_t[::1] tseq, const int64_t[::1] toff,
              const int8_t[::1] kernel, const int32_t[::1] w, const int32_t[::1] zdrop,
              const int32_t[::1] end_bonus, const int32_t[::1] flag, const int8_t[::1] mat,
              int q, int e, int q2, int e2, int n_threads=1):
    """Run the stock ksw2 code on every job (flat arrays as in gpuext/engine/jobs.py); GIL released.

    Returns a dict of result arrays: the ksw_extz_t fields, 'coff' (int64[n+1]) and 'cigar' (uint32).
    """
    import numpy as np
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


# ---- the batch engine (gx_engine.c): rounds over one batch of reads --------------------------------

MODE_RECORD = 0
MODE_FINAL = 1
_driver = None


cdef void _batch_hook(int n_threads, void *batch, int n_seq, int step) noexcept nogil:
    with gil:
        try:
            _driver(n_threads, <size_t>batch, n_seq, mm_map_batch_bases(batch) if step == 0 else 0, step)
        except BaseException as e:  # a failed batch must stop the run, not return half-mapped reads
            import sys
            print(f"[E::gpuext::engine] {type(e).__name__}: {e}", file=sys.stderr, flush=True)
            gx_fatal()


def abort_run():
    """End the process now with status 1, removing the -o file being written (gx_fatal): for an error found
    by another thread before minimap2 has written anything."""
    import sys

    sys.stderr.flush()
    gx_fatal()


def install_engine(driver, int n_steps=1):
    """Map every batch in n_steps pipeline steps, each calling driver(n_threads, batch, n_reads, n_bases, step)
    (n_bases only at step 0).

    None uninstalls (minimap2 maps alone again).
    """
    global _driver, mm_map_batch_hook, mm_map_batch_steps
    _driver = driver
    gx_engine_install(driver is not None)
    if driver is not None:
        mm_map_batch_hook = _batch_hook
        mm_map_batch_steps = n_steps
    else:
        mm_map_batch_hook = NULL
        mm_map_batch_steps = 1


cdef class JobTable:
    """The extension jobs of one batch of reads, with their results once computed."""
    cdef gx_table_t *t

    def __cinit__(self):
        self.t = gx_table_new()

    def __dealloc__(self):
        gx_table_free(self.t)

    def map_round(self, int n_threads, size_t batch, int mode):
        """Map every read of the batch once against this table (GIL released); return the round's counters."""
        cdef gx_round_stats_t st
        with nogil:
            gx_engine_round(self.t, n_threads, <void*>batch, mode, &st)
        return st

    def pending(self, alloc=None):
        """The jobs recorded but not computed yet: (ids, dict of JobBatch arrays, scoring tuple).
        alloc(n, dtype): where the JobBatch arrays go (default np.empty; the CUDA backend's host_alloc, which
        gives page-locked memory with $GPUEXT_PINNED_JOBS=1, sent to the device without a staging copy)."""
        import numpy as np
        cdef int64_t seq_len = 0
        cdef int64_t n = gx_table_pending(self.t, NULL, 0, &seq_len)
        ids = np.empty(max(n, 1), dtype=np.int64)
        cdef int64_t[::1] v_ids = ids
        gx_table_pending(self.t, &v_ids[0], n, NULL)
        new = np.empty if alloc is None else alloc
        arrays = dict(qseq=new(seq_len + 1, np.uint8), qoff=new(n + 1, np.int64),
                      tseq=new(seq_len + 1, np.uint8), toff=new(n + 1, np.int64),
                      kernel=new(n + 1, np.int8), w=new(n + 1, np.int32), zdrop=new(n + 1, np.int32),
                      end_bonus=new(n + 1, np.int32), flag=new(n + 1, np.int32))
        cdef uint8_t[::1] qs = arrays["qseq"], ts = arrays["tseq"]
        cdef int64_t[::1] qo = arrays["qoff"], to = arrays["toff"]
        cdef int8_t[::1] kn = arrays["kernel"]
        cdef int32_t[::1] w = arrays["w"], zd = arrays["zdrop"], eb = arrays["end_bonus"], fl = arrays["flag"]
        gx_table_export(self.t, n, &v_ids[0], &qs[0], &qo[0], &ts[0], &to[0], &kn[0], &w[0], &zd[0], &eb[0], &fl[0])
        for k in ("kernel", "w", "zdrop", "end_bonus", "flag"):
            arrays[k] = arrays[k][:n]
        arrays["qseq"] = arrays["qseq"][:arrays["qoff"][n]]
        arrays["tseq"] = arrays["tseq"][:arrays["toff"][n]]
        mat = np.zeros(25, np.int8)
        cdef int8_t[::1] m = mat
        cdef int q = 0, e = 0, q2 = 0, e2 = 0
        gx_table_scoring(self.t, &m[0], &q, &e, &q2, &e2)
        return ids[:n], arrays, (mat, q, e, q2, e2)

    def predict(self, int n_threads=1):
        """Add the second passes minimap2 will ask for after the computed first passes: (jobs, cells)."""
        cdef int64_t cells = 0
        cdef int64_t n
        with nogil:
            n = gx_table_predict(self.t, n_threads, &cells)
        return n, cells

    def store(self, const int64_t[::1] ids, res):
        """Store a ResultBatch (row i of res is job ids[i] of the table)."""
        import numpy as np
        cdef int64_t n = ids.shape[0]
        if n == 0:
            return
        if res.n != n or len(res.coff) != n + 1 or res.coff[n] > len(res.cigar):
            raise ValueError(f"a backend returned {res.n} results for {n} jobs (or a short CIGAR array)")
        names = ("max", "max_q", "max_t", "mqe", "mqe_t", "mte", "mte_q", "score")
        cols = [np.ascontiguousarray(getattr(res, k), dtype=np.int32) for k in names]
        cdef const int32_t *fields[8]
        cdef const int32_t[::1] col
        for i in range(8):
            col = cols[i]
            fields[i] = &col[0]
        cdef const int8_t[::1] zd = np.ascontiguousarray(res.zdropped, dtype=np.int8)
        cdef const int8_t[::1] re = np.ascontiguousarray(res.reach_end, dtype=np.int8)
        cdef const int64_t[::1] coff = np.ascontiguousarray(res.coff, dtype=np.int64)
        cig = np.concatenate([np.ascontiguousarray(res.cigar, dtype=np.uint32), np.zeros(1, np.uint32)])
        cdef const uint32_t[::1] cg = cig
        gx_table_import(self.t, n, &ids[0], fields, &zd[0], &re[0], &coff[0], &cg[0])
