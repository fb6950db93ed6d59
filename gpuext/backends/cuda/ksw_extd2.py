"""Launcher of kernels/ksw_extd2.cu: minimap2's ksw_extd2_sse over a JobBatch on one GPU, bit-exact.

`supports(batch)` says per job whether the kernel takes it (0) or why not; `run(batch, job_idx)`
computes the jobs it takes and returns their ResultBatch (rows in job_idx order), CIGARs included.
The direction matrices stay on the GPU: the DP, the backtrack and the CIGAR packing all run there,
and only sequences, per-job parameters, the ksw_extz_t fields and the CIGARs cross the bus.

Work plan of one `run` (the host never loops over the jobs):
1. a matrix with -min_sc > 2(q+e) (ksw2_extd2_sse.c:100) makes every job return ksw_reset_extz's
   values: done on the host, nothing reaches the GPU;
2. the sequences go up by asynchronous DMAs: straight from the batch's arrays when they are in
   page-locked memory (`pin`; the engine exports jobs there with $GPUEXT_PINNED_JOBS=1),
   else staged in pinned memory by a few copy threads, piece by piece (page-locked ones of over
   WAVE_BYTES in up to WAVES slices of consecutive jobs, "upload waves", an event after each); meanwhile the per-job
   inputs (as the batch holds them, plus job_idx unless every job runs) go up in one copy and `ksw_extd2_plan` sizes every job on the device from ksw2's own
   direction allocation (n_col*16 bounds its widest band, which sizes its ring), writes the reset
   values as its result (kept by jobs with qlen or tlen <= 0) and sums cells and bytes;
   `ksw_extd2_class` picks its launch class (warps per job, ring size) and a sort key; three small
   kernels (`ksw_extd2_bins_*`, no host synchronisation) order the jobs by class, largest first, in
   bins of an eighth of an octave, and `ksw_extd2_offsets` lays out the arenas (each warp
   of jobs takes its spans from running totals) and counts the classes; one small
   read-back (jobs per class, arena sizes, totals) is the only synchronisation before the DP;
3. jobs that do not fit the memory budget together are cut into chunks (largest first);
4. per chunk, one DP launch per class, each on its own stream, the longest-running classes first
   and on streams of higher priority (`_launch_rank`; with upload waves a throughput class is one launch
   per slice, each waiting only for its slice): APPROX_MAX jobs whose band covers
   the matrix (first-pass gap fills) run a clean DP (`ksw_extd2_dp_fbh16`, two jobs of up to
   256 columns per warp, `ksw_extd2_dp_fb<K>`, a warp per job, or `ksw_extd2_dp_fbp`, a block per
   pass of a big job or of one with FBP_ROWS rows or more over the 16-bit bound, and `ksw_extd2_dp_fbx`, the same
   pipeline with a books block per job, for big exact ones (second-pass gap fills); those of one pass within `_fb16_len` two per lane in 16-bit halves,
   `ksw_extd2_dp_fbh<K>x2` and `ksw_extd2_dp_fb<K>x2`); the others follow ksw2's int8 arrays lane for lane: jobs whose ring has
   at most 2**REG_MAX_LG slots in the
   register kernels (a group of 8, 16 or 32 lanes per job, the ring in registers), the others a
   warp per job, or a middle team (8 warps, `_mid_team`; its exact jobs two anti-diagonals per round,
   `ksw_extd2_dp_w8p_smem`, `_pairs`; with rings of up to 2**10 slots on 7 warps and an 8th for their books,
   `ksw_extd2_dp_w7b_smem`, `_mid7`, `_books_warp`; those too short to be the call's critical path on 4, `_mid8`) or 16 warps for the few jobs large enough
   to be the critical path (the middle team also for rings of 2**WIDE_LG slots), with rings of up to 16384 slots in shared memory, wider ones in
   global memory; with $GPUEXT_KSW_RP the teams' exact jobs run in the ring pipeline instead
   (`ksw_extd2_dp_rp<KC>`, a warp per chunk of target slots, `_rp_kc`; off by default). Every DP kernel ends with its jobs' backtrack (a warp per job), so that a class
   is one launch and nothing on a stream waits for another kernel; then, on the main stream, the
   CIGARs' offsets (ResultBatch.coff: a prefix sum of their lengths on the device), the CIGAR packing
   (`ksw_extd2_pack`) at those offsets, and read-backs into pinned memory of the offsets and the
   result fields (the flags as int8, ResultBatch's types), then of the CIGARs: the host assembles
   nothing.

Device buffers (all owned by `run`, allocated from CuPy's memory pool on the current device, valid
from the H2D copies of a chunk until its CIGARs are back on the host): sequences and per-job
arrays for the whole call; per chunk the direction arena, the per-anti-diagonal offsets, the
global-memory rings and the backtrack CIGAR arena.
"""
from __future__ import annotations

import os
import time

import numpy as np

from ...engine.jobs import (KERNEL_EXTD2, KSW_EZ_APPROX_MAX, KSW_EZ_EXTZ_ONLY, KSW_EZ_SCORE_ONLY, KSW_NEG_INF, JobBatch,
                            ResultBatch, Scoring)
from ... import log
from .loader import load_module
from .staging import Staging, pooled_pinned, release, stream

# supports() reason codes (0: the kernel takes the job)
REJECT_KERNEL = 1   # not a ksw_extd2_sse job (ksw_extz2.py takes the extz2 ones; splice exts2 stays on the CPU)
REJECT_MEMORY = 2   # the job alone needs more device memory than the budget
REJECT_LENGTH = 3   # qlen + tlen >= 2**20: the exact maximum's keys, 8 H + ord, need |H| < 2**27
REASONS = {0: "ok", REJECT_KERNEL: "not extd2 or extz2", REJECT_MEMORY: "over GPU memory budget",
           REJECT_LENGTH: "qlen + tlen over 2^20"}
MAX_QT = 1 << 20

SMEM_MAX_LG = 14            # rings of up to 2**14 slots (224 KiB) live in shared memory
SMEM_PER_SM = 228 * 1024    # shared memory of an SM (sm_90); each block reserves 1 KiB of it
W1_BLOCKS_PER_SM = 3        # blocks of the one-warp kernel per SM (its __launch_bounds__)
RING_BYTES_PER_SLOT = 14    # u y y2 s, x v x2 twice (int8), H (int32)
GMEM_WARPS_PER_BLOCK = 4
BIG_JOB_SHARE = 1 / 4000    # a job with more than this share of the cells gets a middle team or 16 warps
WIDE_LG = 10                # ... and one whose ring has 2**WIDE_LG slots or more the middle team ($GPUEXT_KSW_WIDE_LG, 0: off)
FBP_ROWS = 1024             # a full-band job of this many target rows or more over the 16-bit bound runs in the pass pipeline ($GPUEXT_KSW_FBP_ROWS, 0: off)
FEW_WARPS = 1024            # a launch class of at most this many warps (an eighth of an H100's) is latency-bound ($GPUEXT_KSW_FEW)
FEW_PRIO = 2                # its stream priority, the teams': launched after the pass pipeline, a class at the
                            # pipeline's priority waited behind its grid, which holds more passes than the GPU
                            # ($GPUEXT_KSW_FEW_PRIO=1: the earlier rule, for A/B timing)
MID8 = 3e6                  # a middle-team job of more than (the call's cells / MID8) anti-diagonals gets 8 warps,
                            # the others 4 ($GPUEXT_KSW_MID8, 0: 8 warps for all; performance.md, sixth session)
KSW_REG_CLS = 30           # first class of the register kernels (ksw_extd2_class)
KSW_FB_CLS = 40            # first class of the full-band kernels ksw_extd2_dp_fb<K>, K = FB_K[c - KSW_FB_CLS],
FB_K = (4, 5, 6, 8, 10, 12, 16)   # query columns per lane (FB_KS); class KSW_FB_CLS + 7: ksw_extd2_dp_fbp
FBP_K = 6                         # (big jobs of several passes, K = FBP_K, KSW_FBP_K; 6 since the thirty-fifth session)
KSW_FBH_CLS = KSW_FB_CLS + len(FB_K) + 1   # ksw_extd2_dp_fbh16: jobs of at most 256 columns, two per warp
KSW_FB2_CLS = KSW_FBH_CLS + 1   # ksw_extd2_dp_fb<K>x2 (K = FB_K[c - KSW_FB2_CLS]), then ksw_extd2_dp_fbh<K>x2
                                # (K = FBH2_K[...]): the same jobs in 16-bit halves, two per lane (_fb16_len)
FBH2_K = (13, 14, 15, 16)       # columns per lane of ksw_extd2_dp_fbh<K>x2 (16 lanes per job)
FB_THREADS = 128           # threads per block of the full-band kernels
TP_SMEM = 0                # dynamic shared memory (bytes, unused) each block of the throughput classes (fb, fbh,
                           # fb2, fbh2, reg) asks for: a cap on their blocks per SM, so that the chains' warps
                           # beside them get more of each scheduler's issue slots ($GPUEXT_KSW_TP_SMEM, A/B timing;
                           # performance.md, thirty-fifth session: the chains run 40-80% slower side by side)
FB_JOBS_PER_WARP = {"fb": 1, "fbp": 1, "fbx": 1, "fbb": 1, "fbh": 2, "fb2": 2, "fbh2": 4}   # (fbp, fbx: a warp per pass)
KSW_RP_CLS = 60            # ksw_extd2_dp_rp<KC>: the ring pipeline (exact jobs that would get a team)
RP_KC = 0                  # its words per lane (chunks of 128 KC target slots), 0: off, the teams keep
                           # those jobs ($GPUEXT_KSW_RP=1|2 turns it on: performance.md, 2026-11-23 fifth session)
KSW_FBX_CLS = 61           # ksw_extd2_dp_fbx: big exact full-band jobs in the pass pipeline, with their books
KSW_FBB_CLS = 62           # ksw_extd2_dp_fbb: big band-limited exact jobs in the pass pipeline (rows of ksw2's
                           # aligned region, dp_bx), with their books ($GPUEXT_KSW_FBB=0: the teams keep them)
FBB_MAX_JOBS = 1024         # jobs per launch of ksw_extd2_dp_fbb (its books blocks wait for later blocks)
KSW_NCLS = 64              # launch classes: 3 team sizes x 10 rings, 5 register rings x 2 modes, 9 full-band,
                           # 11 full-band two per lane, the ring pipeline, the exact pass pipelines, + jobs not run
KSW_NBINS = KSW_NCLS << 10  # bins of the launch order (ksw_extd2_bins_*: class, long, 512 size steps)
BINS_THREADS = 1024         # threads of ksw_extd2_bins_scan (KSW_BINS_THREADS)
# the planning's summary (d_acc), as the plan kernels lay it out: jobs per class, the 4 arena sizes
# (ksw_extd2_offsets), then tot (ksw_extd2_plan, ksw_extd2_class): the live jobs' cells, their number,
# their device bytes, the most passes of a pipeline job (fbp, fbx), the ring pipeline's chunks, and
# from TOT_MID8 on the long middle-team jobs per ring class (KSW_TOT_MID8, 10 entries)
SUM_SIZES = KSW_NCLS
SUM_TOT = SUM_SIZES + 4
TOT_CELLS, TOT_JOBS, TOT_BYTES, TOT_PASSES, TOT_RP, TOT_MID8 = range(6)
# register kernels: ring lg -> (G lanes per job, K register groups), 4*G*K >= 2**lg slots; the
# smallest G that fits with K <= 8 (fewest lanes idle, the per-anti-diagonal work shared by 32/G
# jobs); $GPUEXT_KSW_REG_SHAPES overrides entries (e.g. "8:16x4,9:32x4") for timing
REG_SHAPES = {6: (8, 2), 7: (8, 4), 8: (8, 8), 9: (16, 8), 10: (32, 8)}
REG_BUILT = ((8, 2), (8, 4), (8, 8), (16, 4), (16, 8), (32, 4), (32, 8))   # ksw_extd2_dp_reg<G>x<K>_*
REG_LG_LIMIT = 10          # the largest ring (log2 slots) a register kernel can hold
REG_MAX_LG = 8             # default largest ring of the register kernels: on the H100, rings of 2**9
                           # ran slower there (occupancy) than in the shared-memory kernel (performance.md)
REG_THREADS = 128          # threads per block of the register kernels
# Upload waves (ksw_extd2.cu, KSW_WAVES = MAX_WAVES): a call whose sequences are in page-locked memory and take
# more than WAVE_BYTES sends them in up to WAVES slices, about equal numbers of query bytes of consecutive jobs
# (WAVE_MARGIN bytes past the slice's last job), each slice's bytes in DMAs of their own followed by an event.
# The plan kernel puts a job in the first wave by whose end both of its sequences are up (KSW_WAVE_PAD bytes
# past them), so the slices' job bounds are only a guide; the throughput classes (_wave_class) run each
# wave's jobs in a launch that waits for that wave only, so their
# DP starts once the first slice is up instead of all of them (10k set: 163 MB, about 3 ms). The teams and
# pipelines wait for every slice. Each slice is a launch more per class, and the DP cannot start before the
# planning's read-back anyway (10k set: about 1.2 ms, when a third of its sequences is up): on the H200, 3
# slices took the 10k set from 39.6-39.7 to 37.9-38.3 ms (median), 2 to 38.6, 4 to 38.4-38.7 (performance.md,
# twenty-ninth session). $GPUEXT_KSW_WAVES=N: at most N slices (1: one upload, for A/B timing);
# $GPUEXT_KSW_WAVE_BYTES overrides WAVE_BYTES (the emulated tests' small calls).
MAX_WAVES = 4
WAVES = 3
WAVE_BYTES = 32 << 20
WAVE_MARGIN = 256          # (more than the kernel's KSW_WAVE_PAD)
FIELDS = ("max", "max_q", "max_t", "mqe", "mqe_t", "mte", "mte_q", "score", "zdropped", "reach_end")

last_stats: dict = {}


class _Trace:
    """$GPUEXT_KSW_TRACE=1: marks of one `run` on the host clock and, by events on the main stream, on
    the device's (last_stats["trace"]: (mark, host ms, device ms) from the first mark); a diagnostic."""

    def __init__(self, st):
        self.st, self.marks = st, []

    def __call__(self, name):
        self.marks.append((name, time.perf_counter(), self.st.record()))

    def report(self):
        import cupy

        h0, e0 = self.marks[0][1], self.marks[0][2]
        return [(n, (h - h0) * 1e3, cupy.cuda.get_elapsed_time(e0, e)) for n, h, e in self.marks]


def default_gpu_mem() -> int:
    """The device memory budget in bytes: $GPUEXT_GPU_MEM (e.g. 8G, as --gpu-mem) or half of the device's memory."""
    env = os.environ.get("GPUEXT_GPU_MEM")
    if env:
        from ...sizes import parse_size

        return parse_size(env)
    import cupy

    free, total = cupy.cuda.runtime.memGetInfo()
    return int(min(total // 2, free * 0.9))


def _swapped_gaps(scoring) -> tuple[int, int, int, int]:
    """(q, e, q2, e2) after ksw2_extd2_sse.c:78 (the cheaper piece first)."""
    q, e, q2, e2 = int(scoring.q), int(scoring.e), int(scoring.q2), int(scoring.e2)
    if q2 + e2 < q + e:
        q, e, q2, e2 = q2, e2, q, e
    return q, e, q2, e2


def _ring_lg(width: np.ndarray) -> np.ndarray:
    """log2 of the ring size: a power of two >= widest aligned band + 32 (and >= 64)."""
    need = np.maximum(np.asarray(width, np.int64) + 32, 64)
    return np.ceil(np.log2(need)).astype(np.int32)


def _job_bytes(qlen, tlen, dir_bytes, ring_lg, score_only) -> np.ndarray:
    """Device bytes of one job: directions, anti-diagonal offsets, CIGAR arena, global ring."""
    diag = (qlen + tlen).astype(np.int64)
    ring = np.where(ring_lg > SMEM_MAX_LG, RING_BYTES_PER_SLOT << ring_lg.astype(np.int64), 0)
    return np.where(score_only, 0, dir_bytes) + 4 * diag + 4 * (diag + 2) + ring + 64


def _bounds(qlen, tlen, w) -> tuple[np.ndarray, np.ndarray]:
    """ksw2's own direction allocation (ksw2_extd2_sse.c:94, 122), (qlen+tlen-1)*n_col*16 bytes,
    and n_col*16: bounds of the compact direction bytes and of the widest aligned band."""
    q, t = qlen.astype(np.int64), tlen.astype(np.int64)
    ww = np.where(w < 0, np.maximum(q, t), w.astype(np.int64))
    n_col = (np.minimum(np.minimum(q, t), ww + 1) + 15) // 16 + 1
    return np.maximum(q + t - 1, 0) * n_col * 16, n_col * 16


def _upper_bytes(qlen, tlen, w) -> np.ndarray:
    """_job_bytes's inputs with ksw2's own direction allocation as the bound."""
    dir_ub, width = _bounds(qlen, tlen, w)
    return dir_ub, _ring_lg(width)


def supports(batch: JobBatch, gpu_mem: int | None = None) -> np.ndarray:
    """Reason code per job (int8): 0 when this kernel takes it, else REJECT_*."""
    budget = default_gpu_mem() if gpu_mem is None else int(gpu_mem)
    qlen, tlen = batch.qlen(), batch.tlen()
    out = np.zeros(batch.n, np.int8)
    dir_ub, lg = _upper_bytes(qlen, tlen, batch.w)
    need = _job_bytes(qlen, tlen, dir_ub, lg, (batch.flag & KSW_EZ_SCORE_ONLY) != 0)
    out[need > budget] = REJECT_MEMORY
    out[qlen.astype(np.int64) + tlen >= MAX_QT] = REJECT_LENGTH
    out[batch.kernel != KERNEL_EXTD2] = REJECT_KERNEL
    return out


def pin(batch: JobBatch) -> JobBatch:
    """The batch with its arrays in page-locked host memory from CuPy's pool (pooled_pinned), where gpuext
    map's engine exports its jobs with $GPUEXT_PINNED_JOBS=1 (CudaBackend.host_alloc); arrays there already
    are kept.
    run() (and ksw_extz2.run) then sends them with DMAs straight from there, and a call of over WAVE_BYTES
    of sequences goes up in upload waves. The JobBatch twin of ksw_extend2.pin."""
    from dataclasses import fields, replace

    from .staging import page_locked

    return replace(batch, **{f.name: page_locked(getattr(batch, f.name)) for f in fields(batch) if f.name != "scoring"})


def _wave_class(c: int) -> bool:
    """Whether launch class c runs per upload wave (ksw_wave_cls): one-warp rings, register and full-band
    kernels, not the teams, the pass pipelines or the ring pipeline."""
    return 20 <= c < KSW_RP_CLS and c != KSW_FB_CLS + len(FB_K)


def _wave_ends(batch: JobBatch) -> np.ndarray:
    """Where each upload wave but the last ends (int64: the query byte ends, then the target byte ends,
    non-decreasing; empty: one upload): slices of about equal query bytes, as many as the sequences'
    bytes over WAVE_BYTES (at most WAVES or $GPUEXT_KSW_WAVES), only when both sequence arrays are in
    page-locked memory (sent from where they are: staged ones go up piece by piece from the copy
    threads). A slice ends WAVE_MARGIN bytes past its last job's sequences."""
    from .staging import is_pinned

    qs, ts = np.asarray(batch.qseq), np.asarray(batch.tseq)
    cap = min(MAX_WAVES, max(1, _env_int("GPUEXT_KSW_WAVES", WAVES)))
    n_w = min(cap, -(-(qs.nbytes + ts.nbytes) // max(1, _env_int("GPUEXT_KSW_WAVE_BYTES", WAVE_BYTES))))
    if n_w <= 1 or not (is_pinned(qs) and is_pinned(ts)):
        return np.zeros(0, np.int64)
    qoff = np.asarray(batch.qoff, np.int64)
    q0, q1 = int(qoff[0]), int(qoff[-1])
    b = np.searchsorted(qoff, q0 + (q1 - q0) * np.arange(1, n_w, dtype=np.int64) // n_w)
    b = np.unique(b)
    b = b[(b > 0) & (b < batch.n)]
    if not len(b):
        return np.zeros(0, np.int64)
    toff = np.asarray(batch.toff, np.int64)
    ends = [np.maximum.accumulate(np.minimum(off[b] + WAVE_MARGIN, a.nbytes)) for off, a in ((qoff, qs), (toff, ts))]
    return np.concatenate(ends).astype(np.int64)


def _stage_seqs(batch: JobBatch, up, wend: np.ndarray):
    """The sequences to the device on stream up (_stage), by upload waves when wend (_wave_ends) has
    any: (device buffer, offsets, futures, an event after each wave but the last)."""
    if not len(wend):
        return (*_stage([batch.qseq, batch.tseq], up, threaded=True), [])
    st = Staging([batch.qseq, batch.tseq], up)
    nw = len(wend) // 2
    evs = []
    for w in range(nw + 1):   # wave w: bytes [end of wave w - 1, end of wave w) of each array
        for i in (0, 1):
            lo = 0 if w == 0 else int(wend[i * nw + w - 1])
            hi = st.flat[i].nbytes if w == nw else int(wend[i * nw + w])
            if hi > lo:
                st.send(i, lo, hi, threaded=False)   # (page-locked: one DMA from where it is)
        if w < nw:
            evs.append(up.record())
    return st.dev, st.offs, st.futs, evs


def _reset_results(m: int) -> dict:
    """ksw_reset_extz (ksw2.h:164-169) for m jobs."""
    r = {k: np.full(m, -1, np.int32) for k in ("max_q", "max_t", "mqe_t", "mte_q")}
    r["max"] = np.zeros(m, np.int32)
    for k in ("score", "mqe", "mte"):
        r[k] = np.full(m, KSW_NEG_INF, np.int32)
    r["zdropped"] = np.zeros(m, np.int8)
    r["reach_end"] = np.zeros(m, np.int8)
    return r


def _stage(arrays, st, threaded: bool):
    """The arrays (contiguous, any dtype) side by side in one device buffer (uint8), each at a
    256-byte aligned offset and followed by at least 4 bytes of padding: copied into a pinned
    buffer, in pieces of PIECE bytes by the copy threads when threaded, each piece sent by
    an asynchronous DMA on stream st as soon as it is staged; else by the calling thread, each run of
    staged neighbours in one DMA (Staging.send_span). Arrays already in page-locked memory go up from
    where they are. Returns (device buffer, offsets, futures); the copies are done when the futures are."""
    up = Staging(arrays, st)
    if threaded:
        for i in range(len(arrays)):
            up.send(i)
    else:
        up.send_span(0, len(arrays), st)
    return up.dev, up.offs, up.futs


def _env_int(name: str, default: int) -> int:
    """The integer launcher knob $name (A/B timing); unset or empty (as device_check.sh's "default"
    leaves it): default."""
    v = os.environ.get(name, "").strip()
    return int(v) if v else default


def _w1_blocks() -> int:
    """Blocks of the one-warp kernel per SM (its register cap and shared memory per block)."""
    b = _env_int("GPUEXT_KSW_W1_BLOCKS", W1_BLOCKS_PER_SM)
    return b if b in (2, 3, 4) else W1_BLOCKS_PER_SM


def _reg_lg() -> int:
    """Largest ring (log2 slots) of the jobs the register kernels take: $GPUEXT_KSW_REG, 0 (off)
    or 6..REG_LG_LIMIT, default REG_MAX_LG (for A/B timing against the shared-memory kernels)."""
    lg = _env_int("GPUEXT_KSW_REG", REG_MAX_LG)
    return 0 if lg <= 0 else min(max(lg, 6), REG_LG_LIMIT)


def _in_band_no_wrap(q: int, e: int, q2: int, e2: int) -> bool:
    """Whether ksw2's in-band int8 values cannot wrap: (q+e)+(q2+e2) <= 127 (spec §1.6; minimap2's
    mm_check_opt enforces it)."""
    return (q + e) + (q2 + e2) <= 127


def _fb_on(q: int, e: int, q2: int, e2: int, mat: np.ndarray) -> int:
    """Whether full-band APPROX_MAX jobs take the clean-DP kernels (bit 0): $GPUEXT_KSW_FB (0: off,
    for A/B timing), and only where ksw2's in-band int8 values cannot wrap, (q+e)+(q2+e2) <= 127
    (spec §1.6; minimap2's mm_check_opt enforces it), and the scores they use (match, mismatch, N)
    lie in [-16, 15] (their byte table holds 8 * score + 132); and (bit 1) whether those of at most
    256 columns run two per warp in ksw_extd2_dp_fbh16 ($GPUEXT_KSW_FBH, 0: a warp each); (bit 3) whether big
    band-limited exact jobs run by rows of ksw2's region in ksw_extd2_dp_fbb ($GPUEXT_KSW_FBB=1; off by
    default: exact, and E. coli's longest extensions 12.5 -> 7.8 ms, but the class crowds the throughput
    classes, performance.md, tenth session); (bit 4) whether the pass pipeline's jobs run in 16-bit halves in
    ksw_extd2_dp_fbr where _fbr_ok holds ($GPUEXT_KSW_FBR, 0: all in ksw_extd2_dp_fbp's int32; E. coli's call
    0.7-1.4 ms shorter, performance.md, thirty-sixth session)."""
    sc_n = int(mat[24]) if int(mat[24]) != 0 else -e2
    scores_ok = all(-16 <= v <= 15 for v in (int(mat[0]), int(mat[1]), sc_n))
    on = os.environ.get("GPUEXT_KSW_FB", "1").strip() != "0" and _in_band_no_wrap(q, e, q2, e2) and scores_ok
    half = os.environ.get("GPUEXT_KSW_FBH", "1").strip() != "0"
    exact = os.environ.get("GPUEXT_KSW_FBX", "1").strip() != "0"
    x2 = _fb16_len(q, e, q2, e2, int(mat[0])) if on and os.environ.get("GPUEXT_KSW_FB2", "1").strip() != "0" else 0
    band = os.environ.get("GPUEXT_KSW_FBB", "0").strip() not in ("", "0")
    fbr = on and os.environ.get("GPUEXT_KSW_FBR", "1").strip() != "0" and _fbr_ok(q, e, q2, e2, mat)
    return int(on) | (int(on and half) << 1) | (int(on and exact) << 2) | (int(band) << 3) | (int(fbr) << 4) | \
        (x2 << 8)


FBR_FRAME = 32   # steps between ksw_extd2_dp_fbr's frames (KSW_FBR_FRAME)


def _fbr_ok(q: int, e: int, q2: int, e2: int, mat: np.ndarray) -> bool:
    """(bit 4 of _fb_on; $GPUEXT_KSW_FBR=0: off, for A/B timing) whether the pass pipeline runs in 16-bit halves,
    ksw_extd2_dp_fbr: every value of a pass of W = 32 FBP_K columns, held as 8 (x - B) + tag with B = H(i - 1,
    j0 - 1), fits a signed halfword. H moves by at most mch + q + e a cell along a row or a column (the first
    boundary step is q + e; inside, F, F2 bound a drop by min(q+e, q2+e2) and the clamp a rise by mch over the
    diagonal), so a pass's values lie within (W + 2) (mch + q + e) of B, the gap states max(q+e, q2+e2) further
    below, and a score and a tag above (scripts/check_fbr_bound.py measures it). FBP_K must be even."""
    k = _fbp_k()
    step = max(0, int(mat[0])) + q + e
    rows = 32 * k + 2 + 64 + FBR_FRAME   # (a frame is H of the left column FBR_FRAME steps back at most, and the
    # warp's 64 virtual lanes hold rows up to 64 apart)
    return k % 2 == 0 and 8 * (rows * step + 2 * max(q + e, q2 + e2) + 16) + 135 <= 32767


def _fb16_len(q: int, e: int, q2: int, e2: int, mch: int) -> int:
    """The largest qlen + tlen = L of a full-band job whose clean DP fits 16-bit halves (the two
    jobs per lane of ksw_extd2_dp_fb<K>x2, fbh16x2), 0 for none. On the DP's path every H(i, j) lies
    in [-(2 max(q, q2) + max(e, e2) L), mch L / 2] (the boundary and gap paths below, the match
    score per diagonal step above), the gap states down to H - max(q+e, q2+e2), and the kernel
    holds 8 x plus a 3-bit tag, adds a score of at most 8 * 16 + 7, and subtracts two such values:
    all of it stays within a signed halfword when 8 (mch L / 2 + 2 max(q, q2) + max(e, e2) L +
    max(q+e, q2+e2) + 2) + 135 <= 32767."""
    if mch <= 0:
        return 0
    qm, em, qem = max(q, q2), max(e, e2), max(q + e, q2 + e2)
    fixed = 8 * (2 * qm + qem + 2) + 135
    per = 4 * mch + 8 * em   # per unit of L (8 * mch / 2 = 4 mch)
    return max(0, (32767 - fixed) // per)


def _reg_shapes() -> dict:
    """REG_SHAPES with the entries of $GPUEXT_KSW_REG_SHAPES ("lg:GxK,...") in place."""
    shapes = dict(REG_SHAPES)
    for item in filter(None, os.environ.get("GPUEXT_KSW_REG_SHAPES", "").replace(" ", "").split(",")):
        lg, gk = item.split(":")
        G, K = (int(x) for x in gk.lower().split("x"))
        if (G, K) not in REG_BUILT or 4 * G * K < 1 << int(lg) or int(lg) not in shapes:
            raise ValueError(f"GPUEXT_KSW_REG_SHAPES: no register kernel {G}x{K} for rings of 2**{lg} slots")
        shapes[int(lg)] = (G, K)
    return shapes


def _mid_team() -> int:
    """Warps per job of the middle team class (wide rings, jobs of a few thousand anti-diagonals):
    8 of one word per thread and step, or 4 of two ($GPUEXT_KSW_TEAM_MID=4, for A/B timing). A
    band-limited extension's 784-1000-slot band is one step either way; with 8 the step's cells are
    half as long a chain per thread (real E. coli set: that class ended at 19.6 ms, not 25.0)."""
    return 4 if os.environ.get("GPUEXT_KSW_TEAM_MID", "").strip() == "4" else 8


def _mid8() -> float:
    """MID8, or $GPUEXT_KSW_MID8 (0: every middle-team job on 8 warps, as before; for A/B timing). A
    job's anti-diagonals times this above the call's cells makes it long: on 4 warps of two words
    its anti-diagonals (about 2 us each) would outlast the call's throughput-bound span (its cells at
    a few hundred G cells/s), on 8 warps of one word they take half as long a chain; the shorter jobs
    leave the register file and issue slots of half a team to the throughput classes."""
    try:
        return max(0.0, float(os.environ.get("GPUEXT_KSW_MID8", MID8)))
    except ValueError:
        return MID8


def _fbp_k() -> int:
    """Query columns per lane of the pass pipeline (`ksw_extd2_dp_fbp`): FBP_K, or one of FB_K by
    $GPUEXT_KSW_FBP_K (A/B timing: more columns, fewer instructions per cell and a longer step)."""
    k = _env_int("GPUEXT_KSW_FBP_K", FBP_K)
    return k if k in FB_K else FBP_K


def _dev_defines() -> dict[str, str]:
    """Kernel #defines from $GPUEXT_KSW_DEFINES ("NAME=value,NAME2=value"), for A/B timing of
    kernel variants (e.g. FBH2_MIN_BLOCKS=5; KSW_SKIP_TB=1 times the DP without the backtracks and
    leaves the CIGARs empty)."""
    out = {}
    for item in filter(None, (x.strip() for x in os.environ.get("GPUEXT_KSW_DEFINES", "").split(","))):
        name, _, value = item.partition("=")
        out[name.strip()] = value.strip() or "1"
    return out


def _pairs() -> bool:
    """The middle team computes its exact jobs two anti-diagonals per round (`ksw_extd2_dp_w8p_smem`:
    one pair of barriers and one round of bookkeeping per two anti-diagonals, the bytes of the first
    kept in registers); $GPUEXT_KSW_PAIRS=0: one per round (`ksw_extd2_dp_w8_smem`), for A/B timing."""
    return os.environ.get("GPUEXT_KSW_PAIRS", "").strip() != "0"


def _mid7() -> bool:
    """The middle team's 8-warp part takes 7 warps for rings of up to 2**10 slots
    (`ksw_extd2_dp_w7p_smem`): a band-limited extension of w <= 835 still takes two anti-diagonals per
    round there (a band of at most 124 x 7 - 32 slots), its 196 words of a w-751 band on 224 threads
    instead of 256, and the block's registers leave room for 2 more one-warp blocks per SM beside two
    teams (real E. coli set: DP span 15.8-16.0 -> 15.5-15.6 ms). $GPUEXT_KSW_MID7=0: 8 warps (A/B timing)."""
    return os.environ.get("GPUEXT_KSW_MID7", "").strip() != "0"


def _books_warp(q: int, e: int, q2: int, e2: int, mat: np.ndarray) -> bool:
    """The 7-warp middle team's exact pairs get an 8th warp for their keys and books, which it runs a
    round behind the cells (`ksw_extd2_dp_w7b_smem`, dp_team's BW); $GPUEXT_KSW_W7B=0: the cell warps
    run them between the barriers (`ksw_extd2_dp_w7p_smem`), for A/B timing. The books warp takes each
    anti-diagonal's H from its own int8 bytes (KSW_BOOKS_SFX), which holds while no in-band byte wraps
    (_in_band_no_wrap) and the match score leaves room for the larger gap's step; other scorings keep
    their H in the cells (w7p)."""
    return (os.environ.get("GPUEXT_KSW_W7B", "").strip() != "0" and _in_band_no_wrap(q, e, q2, e2)
            and int(np.max(mat)) + max(q + e, q2 + e2) <= 127)


def _rp_kc() -> int:
    """Words per lane of the ring pipeline (`ksw_extd2_dp_rp<KC>`, chunks of 128 KC target slots, a
    warp each), which takes the exact jobs that would get a warp team: $GPUEXT_KSW_RP, 1 or 2, or 0 (the
    default, RP_KC: the teams keep them). On the H100 the 10k simulated set was 4-5% faster with KC 2
    in one call and slower in two others, and the real E. coli set 15-20% slower in every call: its
    lone warps share their SMs' issue slots with the throughput classes, and a band-limited
    extension's anti-diagonal is the chain of one word's cells either way (about 1.4 us)."""
    k = _env_int("GPUEXT_KSW_RP", RP_KC)
    return k if k in (0, 1, 2) else RP_KC


def _class_key(c: int) -> tuple:
    """(warps per job, ring lg or -1 for a ring in global memory) of launch class c; for a
    register class ("reg", ring lg, exact); for a full-band class ("fb", "fbp", "fbh", "fb2" or
    "fbh2", K); for the ring pipeline ("rp", KC)."""
    if c == KSW_RP_CLS:
        return "rp", _rp_kc()
    if c == KSW_FBX_CLS:
        return "fbx", _fbp_k()
    if c == KSW_FBB_CLS:
        return "fbb", 4
    if c >= KSW_FB2_CLS + len(FB_K):
        return "fbh2", FBH2_K[c - KSW_FB2_CLS - len(FB_K)]
    if c >= KSW_FB2_CLS:
        return "fb2", FB_K[c - KSW_FB2_CLS]
    if c == KSW_FB_CLS + len(FB_K):
        return "fbp", _fbp_k()
    if c == KSW_FBH_CLS:
        return "fbh", 16
    if c >= KSW_FB_CLS:
        return "fb", FB_K[c - KSW_FB_CLS]
    if c >= KSW_REG_CLS:
        return "reg", 6 + (c - KSW_REG_CLS) // 2, (c - KSW_REG_CLS) % 2 == 1
    return (16, _mid_team(), 1)[c // 10], (SMEM_MAX_LG - c % 10 if c % 10 < 9 else -1)


def _launch_rank_of_kind(key: tuple) -> tuple[int, int]:
    """(stream priority, launch position) of a launch class by its kind (_class_key): the classes whose
    jobs run longest (warp teams, then a pass pipeline, several passes on one warp, wide rings) are
    launched first, on streams of higher priority, so that the block scheduler starts their blocks
    (and their backtracks) as soon as an SM has room, ahead of the many short jobs, which fill the
    GPU around them. The teams go first: their blocks then land on SMs not yet crowded by others
    (with the pass pipeline first, the real E. coli set's teams ran 26% slower). $GPUEXT_KSW_PRIO=0:
    class order, default priority (for A/B timing)."""
    kind, L = key[0], key[1]
    if kind == "rp":
        return 2, 0
    if _is_team(kind):
        return 2, 0 if kind == 16 else 1
    if kind == "fbb":   # ($GPUEXT_KSW_FBB_RANK="priority,position" for A/B timing)
        r = os.environ.get("GPUEXT_KSW_FBB_RANK", "2,1").split(",")
        return int(r[0]), int(r[1])
    if kind == "fbx":
        return 2, 2
    if kind == "fbp":
        return 1, 0
    if kind in ("fbh", "fbh2"):
        return 0, 24
    if kind in ("fb", "fb2"):
        return (1, 20 - L) if L >= 10 else (0, 40 - L)
    if kind == "reg":
        return 0, 30 - L
    if L < 0:   # one warp, a ring in global memory
        return 1, 10
    return (1 if L >= 9 else 0), 24 - L


def _is_team(kind) -> bool:
    """Whether a _class_key kind is a warp team (several warps per job: 16 or the middle team)."""
    return isinstance(kind, int) and kind > 1


def _class_warps(key: tuple, n: int, shapes: dict) -> float:
    """Warps that the n jobs of launch class key take (for _launch_rank's few-warp rule)."""
    kind = key[0]
    if kind == "reg":
        return n * shapes[key[1]][0] / 32
    if kind == "rp":   # about a band's chunks at a time
        return n * 8
    if kind in FB_JOBS_PER_WARP:
        return n / FB_JOBS_PER_WARP[kind]
    return n * (kind if isinstance(kind, int) else 1)


def _launch_rank(key: tuple, warps: float | None = None) -> tuple[int, int]:
    """_launch_rank_of_kind, and a class of at most FEW_WARPS warps (warps: _class_warps) that is no
    team and no pass pipeline right after the pass pipeline: such a class is not throughput-bound,
    its time is its longest job's (a few long thin jobs took 1.4 ms alone and ended last, at 24.5
    ms, when their blocks waited behind the two-per-warp class's thousands)."""
    r = _launch_rank_of_kind(key)
    few = _env_int("GPUEXT_KSW_FEW", FEW_WARPS)   # (0: off, for A/B timing)
    if warps is not None and warps <= few and not _is_team(key[0]) and key[0] not in ("fbp", "fbx", "fbb", "rp"):
        return max(r[0], _env_int("GPUEXT_KSW_FEW_PRIO", FEW_PRIO)), min(r[1], 5)
    return r


def _launch_order(keys, warps: dict | None = None, ranks: dict | None = None) -> list:
    """The launch class keys in launch order: highest stream priority first, then _launch_rank's
    position (warps: per key, for the few-warp rule); but the pass pipeline right after the teams,
    ahead of the other priority-2 classes: its largest job is one of a call's two longest chains, and
    each launch before it costs the host 0.05-0.3 ms (fbx's preparation about 0.3: E. coli's
    pipeline reached its launch 0.5-0.9 ms after the uploads). A later launch of higher priority still
    has its blocks started first. ($GPUEXT_KSW_FBP_FIRST=0: strictly by priority, for A/B timing.)
    ranks: the keys' _launch_rank, when the caller has them already."""
    rank = dict(ranks) if ranks is not None else \
        {k: _launch_rank(k, None if warps is None else warps[k]) for k in keys}
    if _env_int("GPUEXT_KSW_FBP_FIRST", 1):   # right behind the last of the teams
        tp, tpos = max(_launch_rank_of_kind((nw, 0)) for nw in (16, 8, 4))
        rank.update({k: (tp, tpos + 0.5) for k in keys if k[0] == "fbp"})
    return sorted(keys, key=lambda k: (-rank[k][0], rank[k][1]))


def _reg_kernel_name(G: int, K: int, exact: bool) -> str:
    return f"ksw_extd2_dp_reg{G}x{K}_{'e' if exact else 'a'}"


def module_defines() -> tuple[dict, dict, int, list]:
    """The defines this configuration (the knobs above) builds the module with: (defines, register
    kernel shapes, largest register ring lg, the shapes in use). The knobs it reads are _MODULE_KNOBS,
    the key under which _module keeps its result: a knob added here goes there too."""
    shapes, reg_lg = _reg_shapes(), _reg_lg()
    # only the register kernels this configuration uses are built (NVRTC time grows with each)
    used = sorted({shapes[L] for L in range(6, reg_lg + 1)}) if reg_lg else []
    defines = {"KSW_REG_LIST": " ".join(f"KSW_DP_REG({G}, {K})" for G, K in used)}
    fbp_k = _fbp_k()
    if fbp_k != FBP_K:
        defines["KSW_FBP_K"] = fbp_k
    defines.update(_dev_defines())
    return defines, shapes, reg_lg, used


_MODULE_KNOBS = ("GPUEXT_KSW_REG", "GPUEXT_KSW_REG_SHAPES", "GPUEXT_KSW_FBP_K", "GPUEXT_KSW_DEFINES")
_module_of: dict = {}


def _module():
    """The module on the current device: (module, register kernel shapes, largest register ring lg, the
    shapes in use); kept per device and the values of the knobs module_defines reads (working them out
    and finding the module took a call about 25 us before its planning could start)."""
    import cupy

    key = (cupy.cuda.Device().id,) + tuple(os.environ.get(k) for k in _MODULE_KNOBS)
    got = _module_of.get(key)
    if got is None:
        defines, shapes, reg_lg, used = module_defines()
        got = _module_of[key] = (load_module("ksw_extd2.cu", defines), shapes, reg_lg, used)
    return got


_functions: dict = {}
_big_smem: dict = {}   # id(function) -> the dynamic shared memory it was allowed (over 48 KiB)


def _fn(mod, name: str):
    """mod.get_function(name), kept per module (a lookup and a new Function object each call cost the
    host microseconds each, some 25 of them before a call's first launch)."""
    f = _functions.get((id(mod), name))
    if f is None:
        f = _functions[(id(mod), name)] = mod.get_function(name)
    return f


def kernel_names(used) -> list[str]:
    """Every kernel of the module (ksw_extd2.cu's entry points and the instances of its macros), with
    the register kernels of the shapes used."""
    names = [f"ksw_extd2_{x}" for x in ("plan", "class", "offsets", "rp_chunks", "rp_order", "fb_passes", "pack",
                                        "bins_count", "bins_scan", "bins_place")]
    names += [f"ksw_extd2_dp_w{nw}_{m}" for nw in (1, 4, 8, 16) for m in ("smem", "gmem")]
    names += [f"ksw_extd2_dp_w1_smem_b{b}" for b in (2, 4)]
    names += [f"ksw_extd2_dp_w{x}_smem" for x in ("8p", "7p", "7b")]
    names += [f"ksw_extd2_dp_{x}" for x in ("fbp", "fbr", "fbx", "fbb", "fbh16", "rp1", "rp2")]
    names += [f"ksw_extd2_dp_fb{K}{x}" for K in FB_K for x in ("", "x2")]
    names += [f"ksw_extd2_dp_fbh{K}x2" for K in FBH2_K]
    return names + [_reg_kernel_name(G, K, x) for G, K in used for x in (False, True)]


def _warm_batch() -> JobBatch:
    """A few small map-ont-like jobs (a first-pass gap fill, an extension, an exact gap fill): a call of
    them runs the planning, a DP, the packing and the read-backs."""
    rng = np.random.default_rng(7)
    mat = np.full((5, 5), -4, np.int8)
    np.fill_diagonal(mat, 2)
    mat[4, :] = mat[:, 4] = -1
    qs, ts = [], []
    for L in (200, 300, 150):
        t = rng.integers(0, 4, L).astype(np.uint8)
        q = t.copy()
        q[rng.integers(0, L, L // 10)] = rng.integers(0, 4, L // 10)
        qs.append(q), ts.append(t)
    return JobBatch.of(Scoring(mat.reshape(-1), 4, 2, 24, 1), qs, ts, KERNEL_EXTD2, [30001, 751, 30001], 400, -1,
                       [KSW_EZ_APPROX_MAX, KSW_EZ_EXTZ_ONLY, 0])


def warm_up() -> None:
    """A process's one-time costs of its first call, paid ahead (CudaBackend does this in the background
    while minimap2 builds its index and maps its first reads): the module built or loaded from CuPy's
    cache, every kernel looked up (CUDA loads a kernel lazily, when it is first looked up: the first
    call otherwise pays that in its DP), and a call of a few small jobs, which loads the CuPy kernels of
    the planning and the read-backs."""
    mod, _, _, used = _module()
    missing = []
    for name in kernel_names(used):
        try:   # (a kernel that fails here only loses its head start: tests/unit checks the names)
            _fn(mod, name)
        except Exception as e:
            missing.append(f"{name} ({type(e).__name__}: {e})")
    if missing:
        log.warn("gpuext::warm_up", f"kernels not looked up: {'; '.join(missing)}")
    run(_warm_batch())


def _to_host(d, st, blocking: bool = True) -> np.ndarray:
    """The device array d copied on stream st into pooled page-locked memory (a pageable read-back
    runs at a fraction of the bus speed); returns once it is there (blocking=False: at once, the
    copy enqueued). The caller's results are views of it."""
    h = pooled_pinned(d.size, d.dtype).reshape(d.shape)
    d.get(stream=st, out=h, blocking=blocking)
    return h


def _fields_to_host(d_res, st) -> tuple:
    """The result fields of d_res (rows in FIELDS order) on the host once st has done its work: the 8
    int32 ones and the two flags as int8 (ResultBatch's types), converted on the device."""
    return _to_host(d_res[:8], st, blocking=False), _to_host(d_res[8:10].astype(np.int8), st)


def _result(m: int, h: tuple | None, coff, cigar) -> ResultBatch:
    """h: the int32 fields (8 x m) and the int8 flags (2 x m), in FIELDS order; None: reset values."""
    if h is None:
        res = _reset_results(m)
    else:
        res = {name: (h[0][i] if i < 8 else h[1][i - 8]) for i, name in enumerate(FIELDS)}
    return ResultBatch(coff=coff, cigar=cigar.astype(np.uint32, copy=False), **res)


def run(batch: JobBatch, job_idx=None, gpu_mem: int | None = None) -> ResultBatch:
    """Run the jobs job_idx (default: all) of the batch; rows of the result follow job_idx."""
    import cupy

    t_start = time.perf_counter()
    every = job_idx is None   # (no job list to send: the plan kernel takes job k)
    job_idx = None if every else np.asarray(job_idx, np.int64)
    m = batch.n if every else len(job_idx)
    s = batch.scoring
    q, e, q2, e2 = _swapped_gaps(s)
    mat = np.ascontiguousarray(s.mat, np.int8).reshape(-1)
    early_all = -int(mat[1:].min()) > 2 * (q + e)   # ksw2_extd2_sse.c:96-100 (min over mat[1..])
    stats = {"jobs": m, "jobs_gpu": 0, "chunks": 0, "t_dp": 0.0}
    coff = np.zeros(m + 1, np.int64)
    if m == 0 or early_all:   # every job returns ksw_reset_extz's values
        last_stats.clear()
        last_stats.update(stats, t_total=time.perf_counter() - t_start)
        return _result(m, None, coff, np.zeros(0, np.uint32))
    i32, i64 = np.int32, np.int64
    main, up = stream("main"), stream("upload")
    t0 = time.perf_counter()
    futs = []
    tracing = os.environ.get("GPUEXT_KSW_TRACE") == "1"
    mark = _Trace(main) if tracing else (lambda name: None)
    mark("setup")
    try:
        # the per-job inputs as the batch holds them (the plan kernel gathers job_idx), first (one
        # copy engine takes the DMAs in order: planning would wait for the sequences); then the
        # sequences, sent on the upload stream while the device plans the call (the DP waits for
        # them): from where they are when the engine put them in page-locked memory, else staged
        # by the copy threads
        wend = _wave_ends(batch)   # (upload waves: where each but the last ends)
        ins = [np.asarray(batch.qoff, i64), np.asarray(batch.toff, i64)] + \
              [np.asarray(a, i32) for a in (batch.w, batch.zdrop, batch.end_bonus, batch.flag)] + [mat] + \
              [wend if len(wend) else np.zeros(1, i64)] + ([] if every else [job_idx])
        d_in, ioff, _ = _stage(ins, main, threaded=False)
        mark("inputs sent")
        ev_up0 = up.record()
        d_seq, soff, futs, ev_waves = _stage_seqs(batch, up, wend)
        mark("sequences enqueued")
        # the kernels and knobs of this configuration, while the DMAs run
        nblk = _w1_blocks()
        mod, shapes, reg_lg, _ = _module()
        k_dp = {(nw, sm): _fn(mod, f"ksw_extd2_dp_w{nw}_{'smem' if sm else 'gmem'}")
                for nw in (1, 4, 8, 16) for sm in (True, False)}
        if nblk != W1_BLOCKS_PER_SM:
            k_dp[(1, True)] = _fn(mod, f"ksw_extd2_dp_w1_smem_b{nblk}")
        # the 8-warp team's jobs with rings of up to 2**10 slots on 7 warps (_mid7), and an 8th for their
        # books (_books_warp): the kernel and its threads per block
        k_w7, w7_threads = None, 0
        if _mid_team() == 8 and _pairs():
            k_dp[(8, True)] = _fn(mod, "ksw_extd2_dp_w8p_smem")
            if _mid7():
                bw = _books_warp(q, e, q2, e2, mat)
                k_w7 = _fn(mod, "ksw_extd2_dp_w7b_smem" if bw else "ksw_extd2_dp_w7p_smem")
                w7_threads = 256 if bw else 224
        smem_per_block = SMEM_PER_SM // nblk - 1024
        # one-warp jobs with smaller rings run in rings of 2**lfloor: 8 of those still fit in a block
        lfloor = max([L for L in range(6, SMEM_MAX_LG + 1) if 8 * (RING_BYTES_PER_SLOT << L) <= smem_per_block] or [6])
        k_plan, k_class, k_off, k_rpc, k_rpo, k_fbn, k_pack, k_bc, k_bs, k_bp = (
            _fn(mod, f"ksw_extd2_{x}") for x in ("plan", "class", "offsets", "rp_chunks", "rp_order", "fb_passes",
                                                 "pack", "bins_count", "bins_scan", "bins_place"))
        rp_kc, mid8 = _rp_kc(), _mid8()
        tp_smem = max(0, min(_env_int("GPUEXT_KSW_TP_SMEM", TP_SMEM), SMEM_PER_SM - 1024))
        fb = _fb_on(q, e, q2, e2, mat)
        # $GPUEXT_KSW_SERIAL=1: every class on the main stream, one after another, so that last_stats
        # has each class's time alone (a diagnostic: the classes normally run side by side)
        serial = os.environ.get("GPUEXT_KSW_SERIAL", "") == "1"
        prio = os.environ.get("GPUEXT_KSW_PRIO", "1").strip() != "0"
        # $GPUEXT_KSW_SORT=argsort: the launch order by CuPy's argsort (exact sizes; for A/B timing)
        bins = os.environ.get("GPUEXT_KSW_SORT", "").strip() != "argsort"
        d_qseq, d_tseq = d_seq[soff[0]:], d_seq[soff[1]:]
        d_qoff, d_toff = (d_in[o:o + a.nbytes].view(i64) for o, a in zip(ioff[:2], ins[:2]))
        d_wb, d_zdb, d_ebb, d_flb = (d_in[o:o + a.nbytes].view(i32) for o, a in zip(ioff[2:6], ins[2:6]))
        d_mat = d_in[ioff[6]:ioff[6] + mat.nbytes].view(np.int8)
        d_wend = d_in[ioff[7]:ioff[7] + ins[7].nbytes].view(i64)
        d_jidx = d_qoff if every else d_in[ioff[8]:ioff[8] + job_idx.nbytes].view(i64)   # (not read when every)
        with main:
            d32 = cupy.empty((10, m), i32)   # qlen tlen w zdrop end_bonus flag ring_lg width class wave
            d64 = cupy.empty((6, m), i64)    # qst tst dir_off doff_off cig_off ring_off
            d_sz = cupy.empty((6, m), i64)   # need dir_bytes n_doff n_cig ring_bytes cells
            d_res = cupy.empty((11, m), i32)  # the ksw_extz_t fields (FIELDS order), CIGAR length
            # the planning's summary, read back at once: jobs per class, arena sizes (ksw_extd2_offsets);
            # then tot: live cells, live jobs, their device bytes, most passes (fbp), rp chunks; long
            # middle-team jobs per ring class; then the jobs per class and upload wave
            n_acc = SUM_TOT + TOT_MID8 + 10
            n_sum = n_acc + KSW_NCLS * MAX_WAVES
            b0 = (n_sum + 1) // 2 * 2   # the bins' counts after it, 16-byte aligned (the scan's loads)
            d_acc = cupy.zeros(b0 + (KSW_NBINS // 2 if bins else 0), np.uint64)
            d_tot = d_acc[SUM_TOT:n_acc]
            d_key = cupy.empty(m, i64)
            grid = ((m + 255) // 256,)
            k_plan(grid, (256,), (i32(m), d_jidx, d_qoff, d_toff, d_wb, d_zdb, d_ebb, d_flb, i32(0), d32, d64,
                                  d_sz, d_res, d_tot, i32(every), d_wend, i32(len(wend) // 2)))
            k_class(grid, (256,), (i32(m), d_sz, d32, d_tot, np.float64(BIG_JOB_SHARE), i32(lfloor), i32(reg_lg),
                                   i32(fb), i32(_env_int("GPUEXT_KSW_WIDE_LG", WIDE_LG)),
                                   i32(_env_int("GPUEXT_KSW_FBP_ROWS", FBP_ROWS)), i32(rp_kc),
                                   np.float64(mid8), d_key))
            mark("plan and class")
        d_qlen, d_tlen, d_w, d_zd, d_eb, d_flag, d_lg = (d32[i] for i in range(7))
        d_qst, d_tst, d_diroff, d_doffoff, d_cigoff, d_ringoff = (d64[i] for i in range(6))
        d_ncig = d_res[10]

        def tail(st, ev_a, key, n):
            """After a class's kernel (DP and backtrack) on its stream st: its end event, which the main
            stream waits for; (start event, end event, key, n)."""
            with st:
                ev_b = st.record()
                main.wait_event(ev_b)
            return ev_a, ev_b, key, n

        budget = []   # the device memory budget (bytes), asked for by the first plan_chunk

        def plan_chunk(sub):
            """Launch order (class, then cells, largest first) and arena offsets of the jobs sub
            (all jobs when None; those that do not run come last), and the summary (d_acc): jobs
            per class, the 4 arena sizes, tot."""
            with main:
                if sub is None and bins:   # (ksw_extd2_bins_*: the jobs by class, then size, in 3 launches)
                    lst, d_bins = cupy.empty(m, i64), d_acc[b0:].view(np.uint32)
                    k_bc(grid, (256,), (i32(m), d_key, d_bins))
                    k_bs((1,), (BINS_THREADS,), (d_bins,))
                    k_bp(grid, (256,), (i32(m), d_key, d_bins, lst))
                else:
                    perm = cupy.argsort(d_key if sub is None else d_key[sub])
                    lst = perm if sub is None else sub[perm]
                mark("argsort")
                n = len(lst)
                if sub is not None:   # (the first call's are zero)
                    d_acc[:SUM_TOT].fill(0)
                    d_acc[n_acc:n_sum].fill(0)
                lst32 = cupy.empty(n, i32)
                k_off(((n + 255) // 256,), (256,), (i32(n), lst, d_sz, d64, d32, i32(m), lst32, d_acc,
                                                     d_acc[n_acc:n_sum]))
                mark("offsets")
                if not budget:   # (memGetInfo, a driver call, while the device plans)
                    budget.append(default_gpu_mem() if gpu_mem is None else int(gpu_mem))
                h = cupy.asnumpy(d_acc[:n_sum], stream=main)
                mark("summary read back")
                return lst32, h

        lst32, summ = plan_chunk(None)
        stats["t_plan"] = time.perf_counter() - t0
        tot = summ[SUM_TOT:]
        nlive, need_all, max_pass = int(tot[TOT_JOBS]), int(tot[TOT_BYTES]), int(tot[TOT_PASSES])
        rp_ids = int(tot[TOT_RP])   # the ring pipeline's chunks over the call (a bound for each chunk of it)
        stats["jobs_gpu"] = nlive
        h_all = None
        chunk_out = []   # (ncig per job of the call, packed CIGARs in job order) per chunk
        if nlive:
            if need_all <= budget[0]:
                chunks = [None]
            else:   # chunks of the jobs in order of cells, largest first, that fit the budget
                with main:
                    order = cupy.argsort(-d_sz[5])
                    csum = cupy.asnumpy(cupy.cumsum(d_sz[0][order]), stream=main)[:nlive]
                chunks, pos = [], 0
                while pos < nlive:
                    base = int(csum[pos - 1]) if pos else 0
                    cnt = max(1, int(np.searchsorted(csum[pos:], base + budget[0], side="right")))
                    chunks.append((pos, pos + cnt))
                    pos += cnt
            t_w = time.perf_counter()
            for f in futs:
                f.result()
            futs = []
            ev_seq = up.record()
            stats["t_h2d_wait"] = time.perf_counter() - t_w
            stats["t_prep"] = time.perf_counter() - t0
            for ci, ch in enumerate(chunks):
                t_c = time.perf_counter()
                if ch is not None:
                    lst32, summ = plan_chunk(order[ch[0]:ch[1]])
                    if ci:
                        with main:
                            d_ncig.fill(0)   # jobs of earlier chunks: no CIGAR in this chunk's packing
                stats["chunks"] += 1
                cnt = summ[:KSW_NCLS - 1].astype(np.int64)
                sizes = [int(x) for x in summ[SUM_SIZES:SUM_TOT]]
                with main:
                    d_dir = cupy.empty(max(sizes[0], 16), np.uint8)
                    d_doff = cupy.empty(max(sizes[1], 1), np.uint32)
                    d_cig = cupy.empty(max(sizes[2], 1), np.uint32)
                    d_ring = cupy.empty(max(sizes[3], 16), np.uint8)
                    ev_ar = main.record()   # (the arenas: the earliest any DP may start)
                    main.wait_event(ev_seq)
                    ev_in = main.record()
                # upload waves (a call in one chunk): a throughput class's jobs of wave w wait for
                # ev_ar and ev_waves[w] (the last wave: ev_in), and the stats count from ev_ar
                n_waves = len(ev_waves) + 1 if ch is None else 1
                ev_t0 = ev_ar if n_waves > 1 else ev_in
                wcnt = summ[n_acc:n_sum].astype(np.int64).reshape(KSW_NCLS, MAX_WAVES)
                mark("arenas, sequences up")
                stats["t_chunk_plan"] = stats.get("t_chunk_plan", 0.0) + time.perf_counter() - t_c
                ev, tails, starts = [], [], []
                keep = []   # buffers of launches in flight
                first = np.concatenate([[0], np.cumsum(cnt)]).astype(np.int64)   # lst32 is in class order
                off = int(first[-1])
                present = {_class_key(int(c)): int(c) for c in np.flatnonzero(cnt)}
                warps = {k: _class_warps(k, int(cnt[c]), shapes) for k, c in present.items()}
                # launches: (key, class, first job in lst32, jobs); the middle team's jobs come longest
                # first, and those long enough to be the call's critical path (counted by ksw_extd2_class)
                # get 8 warps, the rest 4: two launches of one class
                ranks = {k: _launch_rank(k, w) for k, w in warps.items()}   # (each launch's stream priority)
                parts = []
                for key in (_launch_order(present, ranks=ranks) if prio else present):
                    c, n = present[key], int(cnt[present[key]])
                    if key[0] == "fbb":   # fewer books blocks per launch than SM slots (ksw_extd2_dp_fbb:
                        # half the slots of its 16 one-warp blocks per SM)
                        nb = max(1, min(FBB_MAX_JOBS, 8 * cupy.cuda.Device().attributes["MultiProcessorCount"]))
                        parts += [(key, c, int(first[c]) + a, min(nb, n - a), None) for a in range(0, n, nb)]
                        continue
                    if n_waves > 1 and _wave_class(c):   # a launch per upload wave (lst32: the class's jobs
                        # wave by wave, ksw_extd2_class's key)
                        s0 = int(first[c])
                        for w in range(n_waves):
                            nw_ = int(wcnt[c, w])
                            parts += [(key, c, s0, nw_, w)] if nw_ else []
                            s0 += nw_
                        continue
                    n8 = min(n, int(summ[SUM_TOT + TOT_MID8 + c - 10])) if key[0] == 8 and mid8 else n
                    parts += [(key, c, int(first[c]), n8, None)] if n8 else []
                    parts += [((4, key[1]), c, int(first[c]) + n8, n - n8, None)] if n > n8 else []
                if n_waves > 1:   # the first wave's launches, then those that wait for every wave, then the rest
                    parts.sort(key=lambda p: 0 if p[4] == 0 else 1 if p[4] is None else 1 + p[4])
                for key, c, s0, n, wave in parts:
                    nw, L = key[:2]
                    smem = L >= 0
                    if nw == "reg":   # a group of G lanes per job, the ring in registers
                        fn = _fn(mod, _reg_kernel_name(*shapes[L], key[2]))
                        tpb, shm = REG_THREADS, 0
                        jobs_per_block = REG_THREADS // shapes[L][0]
                    elif nw in ("fbp", "fbx", "fbb"):   # a block (one warp) per pass of each job (fbx, fbb: and
                        # its books; fbp in 16-bit halves with fb's bit 4, ksw_extd2_dp_fbr)
                        fn = _fn(mod, "ksw_extd2_dp_fbr" if nw == "fbp" and fb & 16 else f"ksw_extd2_dp_{nw}")
                        tpb, shm, jobs_per_block = 32, 0, 1
                    elif nw == "rp":   # a block (one warp) per chunk of each job
                        fn = _fn(mod, f"ksw_extd2_dp_rp{L}")
                        tpb, shm, jobs_per_block = 32, 0, 1
                    elif nw in FB_JOBS_PER_WARP:   # L = K columns per lane: a warp per job (fb), 16 lanes per
                        # job (fbh), and the same two jobs per lane in 16-bit halves (fb2, fbh2)
                        fn = _fn(mod, {"fb": f"ksw_extd2_dp_fb{L}", "fbh": "ksw_extd2_dp_fbh16",
                                               "fb2": f"ksw_extd2_dp_fb{L}x2", "fbh2": f"ksw_extd2_dp_fbh{L}x2"}[nw])
                        tpb, shm, jobs_per_block = FB_THREADS, 0, FB_THREADS // 32 * FB_JOBS_PER_WARP[nw]
                    else:
                        fn = k_dp[(nw, smem)]
                        if nw > 1:   # one job per block
                            tpb, shm = 32 * nw, (RING_BYTES_PER_SLOT << L) if smem else 0
                            if nw == 8 and smem and L <= 10 and k_w7 is not None:
                                fn, tpb = k_w7, w7_threads
                        elif smem:   # several jobs per block, a warp each
                            tpb = 32 * max(1, min(8, smem_per_block // (RING_BYTES_PER_SLOT << L)))
                            shm = tpb // 32 * (RING_BYTES_PER_SLOT << L)
                        else:
                            tpb, shm = 32 * GMEM_WARPS_PER_BLOCK, 0
                        jobs_per_block = 1 if nw > 1 else tpb // 32
                    if tp_smem and nw in ("reg", "fb", "fbh", "fb2", "fbh2"):
                        shm = max(shm, tp_smem)   # (their kernels use no dynamic shared memory)
                    if shm > 48 * 1024 and _big_smem.get(id(fn), 0) < shm:   # (a driver call: once per size)
                        fn.max_dynamic_shared_size_bytes = _big_smem[id(fn)] = shm
                    d_sel = lst32[s0:s0 + n]
                    st = main if serial else \
                        stream(key, (ranks.get(key) or _launch_rank(key))[0] if prio else 0)
                    if wave is not None and wave < n_waves - 1:
                        st.wait_event(ev_ar)
                        st.wait_event(ev_waves[wave])
                    else:
                        st.wait_event(ev_in)
                    args = (d_sel, i32(n), i32(max(L, 0)), d_qseq, d_qst, d_qlen, d_tseq, d_tst, d_tlen,
                            d_w, d_zd, d_flag, d_diroff, d_dir, d_doffoff, d_doff, d_ringoff, d_lg,
                            d_ring, d_mat, i32(q), i32(e), i32(q2), i32(e2), d_res, i32(m),
                            d_eb, d_cigoff, d_cig, d_ncig)   # the backtrack's, which every DP kernel ends with
                    with st:
                        ev_a = st.record() if serial else ev_t0
                        if tracing:   # when the class's stream reaches its launch (about its first block's start)
                            starts.append((key, st.record(), time.perf_counter()))
                        nblk = (n + jobs_per_block - 1) // jobs_per_block
                        if nw in ("fbp", "fbx", "fbb"):   # a block per pass, a job's passes one after another (the
                            # largest job's first: blocks start in index order, and on a crowded GPU a
                            # pass that starts late holds up the rest of its job); the row counts (fbx:
                            # then its books block, and the key step counts and stop flags)
                            nblk = n * max_pass   # (max_pass counts an fbx or fbb job's books block)
                            if nw == "fbb":   # the books blocks, then the jobs' passes pass by pass (at most
                                # max_pass - 1 each); row counts, key step counts, stop flags
                                nblk = n + n * (max_pass - 1)
                                pend = d_qst   # (an int64 array for the parameter: dp_fbb does not read it)
                                keep += [cupy.zeros(2 * n * (max_pass - 1) + n, i32), pend]
                            else:
                                nprog = nblk * (1 + (nw == "fbx"))
                                buf = cupy.empty(n + (nprog + 1) // 2, i64)   # pend, then prog (int32)
                                pend, prog = buf[:n], buf[n:].view(i32)
                                k_fbn((1,), (256,), (i32(n), d_sel, d_qlen, d_tlen, i32(nw == "fbx"), pend, prog, i64(nprog)))
                                keep += [prog, pend]
                            args += (keep[-2], pend)
                        elif nw == "rp":   # a block per chunk, ordered by its first anti-diagonal (a
                            # chunk's producer, the chunk below, then comes first); progress counts and
                            # stop flags
                            nblk = rp_ids
                            nch = cupy.empty(n, i64)
                            k_rpc(((n + 255) // 256,), (256,), (i32(n), d_sel, d_qlen, d_tlen, d_w, i32(L), nch))
                            cend = cupy.cumsum(nch)
                            rkey = cupy.empty(nblk, i64)
                            k_rpo(((nblk + 255) // 256,), (256,), (i32(nblk), i32(n), d_sel, d_qlen, d_tlen, d_w,
                                                                     i32(L), cend, rkey))
                            bmap = cupy.argsort(rkey).astype(i32)
                            keep += [nch, cend, rkey, bmap, cupy.zeros(nblk + n, i32)]
                            args += (cend, bmap, keep[-1])
                        fn((nblk,), (tpb,), args, shared_mem=shm)
                    if serial:   # the class's end event right after its kernel (the class alone)
                        ev.append(tail(st, ev_a, key, n))
                    else:
                        tails.append((st, ev_a, key, n))
                # then the end events, enqueued after every launch: streams beyond the driver's hardware
                # queues (8 by default) share them, and anything that waits for a kernel there holds up
                # the other streams' later work (a class's DP had started only when another's ended; a
                # backtrack launched after its DP waited for the DP of a class in the same queue, and
                # the 10k set's short exact classes then ended with the two-per-warp class)
                ev += [tail(*t) for t in tails]
                t_launched = time.perf_counter()
                mark("launched")
                for nw in (1, _mid_team(), 16, "reg", "fb", "fbp", "fbx", "fbb", "fbh", "fb2", "fbh2", "rp"):
                    stats.setdefault("jobs_per_team_size", {}).setdefault(nw, 0)
                for k, c in present.items():
                    stats["jobs_per_team_size"][k[0]] += int(cnt[c])
                last = ci == len(chunks) - 1
                with main:
                    ev_end = main.record()   # every class done (main waits for their end events)
                    # CIGARs of the chunk packed in job order (jobs outside the chunk have ncig 0), at
                    # d_coff[j] (ResultBatch.coff of the chunk's CIGARs: its last entry is their total)
                    d_coff = cupy.zeros(m + 1, i64)
                    cupy.cumsum(d_ncig, dtype=i64, out=d_coff[1:])
                    d_out = cupy.empty(max(sizes[2], 1), np.uint32)
                    k_pack(((32 * off + 255) // 256,), (256,),   # (a warp per job)
                           (lst32, i32(off), d_flag, d_cigoff, d_cig, d_ncig, d_coff, d_out))
                    ev_pk = main.record()
                    h_coff = _to_host(d_coff, main, blocking=not last)
                    if last:   # and the result fields, the flags as int8 (ResultBatch's types)
                        h_all = _fields_to_host(d_res, main)
                    ev_rb = main.record()
                    total = int(h_coff[-1])
                    h_out = _to_host(d_out[:total], main, blocking=False)
                    ev_cg = main.record()
                # while the CIGARs come back (the host has read what the main stream wrote after waiting
                # for every class, so their events are done): the statistics
                stats["cigar_words"] = stats.get("cigar_words", 0) + total
                stats["cigar_cap"] = stats.get("cigar_cap", 0) + sizes[2]   # (the backtracks' arena, words)
                stats["t_dp"] += max(cupy.cuda.get_elapsed_time(ev_t0, x[1]) for x in ev) / 1e3
                stats["waves"] = n_waves
                if ci == 0:   # the sequences' DMAs (beside the device planning)
                    stats["t_upload"] = cupy.cuda.get_elapsed_time(ev_up0, ev_seq) / 1e3
                # per launch class: (warps per job, ring log2 or -1 for global, jobs, ms), ms: from the
                # uploads (with upload waves: the arenas) to the end of the class's kernel, its backtrack
                # included (with GPUEXT_KSW_SERIAL=1: the class alone); a class of several launches (upload
                # waves, fbb's) is one entry: its jobs, its last end (serial: the sum of its launches' times);
                # register classes: ("reg<G>x<K><a|e>", ring log2, ...)
                def name(k):
                    return k[0] if k[0] != "reg" else "reg%dx%d%s" % (*shapes[k[1]], "e" if k[2] else "a")
                rows: dict = {}
                for a, b, k, n in ev:
                    t, r = cupy.cuda.get_elapsed_time(a, b), rows.get((name(k), k[1]))
                    rows[(name(k), k[1])] = (name(k), k[1], n, t) if r is None else \
                        (r[0], r[1], r[2] + n, r[3] + t if serial else max(r[3], t))
                stats.setdefault("classes", []).extend(rows.values())
                if tracing:   # (GPUEXT_KSW_TRACE=1) per launch: its class, its start on the device (ms from the
                    # uploads) and on the host (ms from the "setup" mark, as the trace: when the launch was enqueued)
                    stats.setdefault("class_starts", []).extend(
                        (name(k), k[1], cupy.cuda.get_elapsed_time(ev_t0, e), (h - t0) * 1e3) for k, e, h in starts)
                main.synchronize()
                mark("read back")
                stats["t_wait"] = stats.get("t_wait", 0.0) + time.perf_counter() - t_launched
                # after the DP: packing, the results' read-back, the CIGARs' (the host reads the total between)
                for k, a, b in (("t_pack", ev_end, ev_pk), ("t_rb_res", ev_pk, ev_rb), ("t_rb_cig", ev_rb, ev_cg)):
                    stats[k] = stats.get(k, 0.0) + cupy.cuda.get_elapsed_time(a, b) / 1e3
                chunk_out.append((h_coff, h_out))
                del d_dir, d_doff, d_cig, d_ring, d_out, keep
        else:
            with main:
                h_all = _fields_to_host(d_res, main)
    finally:
        for f in futs:   # the pinned buffer must not be reused while a copy thread still writes
            f.result()
        up.synchronize()
        main.synchronize()   # (after an error: no read-back still writing into a pooled pinned block)
        release()   # (the staging buffers: no DMA reads them any more)
    t1 = time.perf_counter()
    if len(chunk_out) == 1:
        coff, cigar = chunk_out[0]
    elif chunk_out:   # chunk c holds its jobs' CIGARs in job order (others have ncig 0): gather them
        ncig = np.zeros(m, i64)
        src_start = np.zeros(m, i64)
        base = 0
        for c_off, h_out in chunk_out:
            cn = np.diff(c_off)
            mine = cn > 0
            ncig[mine] = cn[mine]
            src_start[mine] = base + c_off[:-1][mine]
            base += len(h_out)
        np.cumsum(ncig, out=coff[1:])
        total = int(coff[-1])
        allc = np.concatenate([c[1] for c in chunk_out])
        gather = np.repeat(src_start - coff[:-1], ncig) + np.arange(total, dtype=i64)
        cigar = allc[gather] if total else np.zeros(0, np.uint32)
    else:
        cigar = np.zeros(0, np.uint32)
    out = _result(m, h_all, coff, cigar)
    stats["t_post"] = time.perf_counter() - t1
    stats["t_setup"] = t0 - t_start
    if isinstance(mark, _Trace):
        mark("result")
        main.synchronize()
        stats["trace"] = mark.report()
    stats["t_total"] = time.perf_counter() - t_start
    last_stats.clear()
    last_stats.update(stats)
    return out


__all__ = ["supports", "run", "default_gpu_mem", "REJECT_KERNEL", "REJECT_MEMORY", "REJECT_LENGTH",
           "REASONS"]
