"""Launcher of kernels/ksw_extd2.cu: minimap2's ksw_extd2_sse over a JobBatch on one GPU, bit-exact.

`supports(batch)` says per job whether the kernel takes it (0) or why not; `run(batch, job_idx)`
computes the jobs it takes and returns their ResultBatch (rows in job_idx order), CIGARs included.
The direction matrices stay on the GPU: the DP, the backtrack and the CIGAR packing all run there,
and only sequences, per-job parameters, the ksw_extz_t fields and the CIGARs cross the bus.

Work plan of one `run`:
1. jobs that ksw2 returns from before any DP (qlen or tlen <= 0; a matrix with
   -min_sc > 2(q+e), ksw2_extd2_sse.c:76 and :100) get ksw_reset_extz's values on the host;
2. `ksw_extd2_size` (one thread per job) gives each job's direction bytes (ksw2's
   per-anti-diagonal aligned width, en - st + 1, summed) and widest band, which sizes its ring;
3. jobs are ordered by band area, largest first, and cut into chunks that fit the memory budget;
4. per chunk, one DP launch per (warps per job, ring size) class, each on its own stream: a warp
   per job, or 4 or 16 warps for the few jobs large enough to be the critical path; rings of up
   to 16384 slots in shared memory, wider ones in global memory; then the backtrack
   (`ksw_extd2_tb`) and the CIGAR packing (`ksw_extd2_pack`).

Device buffers (all owned by `run`, allocated from CuPy's memory pool on the current device, valid
from the H2D copies of a chunk until its CIGARs are back on the host): sequences and per-job
arrays for the whole call; per chunk the direction arena, the per-anti-diagonal offsets, the
global-memory rings and the backtrack CIGAR arena.
"""
from __future__ import annotations

import os
import time

import numpy as np

from ...engine.jobs import KERNEL_EXTD2, KSW_EZ_SCORE_ONLY, KSW_NEG_INF, JobBatch, ResultBatch, band_cells
from .loader import load_module

# supports() reason codes (0: the kernel takes the job)
REJECT_KERNEL = 1   # not a ksw_extd2_sse job (single affine extz2, splice exts2)
REJECT_MEMORY = 2   # the job alone needs more device memory than the budget
REASONS = {0: "ok", REJECT_KERNEL: "not extd2", REJECT_MEMORY: "over GPU memory budget"}

SMEM_MAX_LG = 14            # rings of up to 2**14 slots (224 KiB) live in shared memory
SMEM_PER_BLOCK = 96 * 1024  # shared memory per block (2 blocks per SM) for the narrower rings
RING_BYTES_PER_SLOT = 14    # u y y2 s, x v x2 twice (int8), H (int32)
GMEM_WARPS_PER_BLOCK = 4
BIG_JOB_SHARE = 1 / 4000    # a job with more than this share of the cells gets 4 or 16 warps
FIELDS = ("max", "max_q", "max_t", "mqe", "mqe_t", "mte", "mte_q", "score", "zdropped", "reach_end")

last_stats: dict = {}


def default_gpu_mem() -> int:
    """The device memory budget in bytes: $GPUEXT_GPU_MEM (e.g. 8G) or half of the device's memory."""
    env = os.environ.get("GPUEXT_GPU_MEM")
    if env:
        units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
        env = env.strip().upper().rstrip("B")
        return int(float(env[:-1]) * units[env[-1]]) if env[-1] in units else int(env)
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


def _upper_bytes(qlen, tlen, w) -> np.ndarray:
    """_job_bytes with ksw2's own direction allocation (ksw2_extd2_sse.c:94, 122) as the bound."""
    q, t = qlen.astype(np.int64), tlen.astype(np.int64)
    ww = np.where(w < 0, np.maximum(q, t), w.astype(np.int64))
    n_col = (np.minimum(np.minimum(q, t), ww + 1) + 15) // 16 + 1
    dir_ub = np.maximum(q + t - 1, 0) * n_col * 16
    return dir_ub, _ring_lg(n_col * 16)


def supports(batch: JobBatch, gpu_mem: int | None = None) -> np.ndarray:
    """Reason code per job (int8): 0 when this kernel takes it, else REJECT_*."""
    budget = default_gpu_mem() if gpu_mem is None else int(gpu_mem)
    qlen, tlen = batch.qlen(), batch.tlen()
    out = np.zeros(batch.n, np.int8)
    dir_ub, lg = _upper_bytes(qlen, tlen, batch.w)
    need = _job_bytes(qlen, tlen, dir_ub, lg, (batch.flag & KSW_EZ_SCORE_ONLY) != 0)
    out[need > budget] = REJECT_MEMORY
    out[batch.kernel != KERNEL_EXTD2] = REJECT_KERNEL
    return out


def _reset_results(m: int) -> dict:
    """ksw_reset_extz (ksw2.h:164-169) for m jobs."""
    r = {k: np.full(m, -1, np.int32) for k in ("max_q", "max_t", "mqe_t", "mte_q")}
    r["max"] = np.zeros(m, np.int32)
    for k in ("score", "mqe", "mte"):
        r[k] = np.full(m, KSW_NEG_INF, np.int32)
    r["zdropped"] = np.zeros(m, np.int8)
    r["reach_end"] = np.zeros(m, np.int8)
    return r


def run(batch: JobBatch, job_idx=None, gpu_mem: int | None = None) -> ResultBatch:
    """Run the jobs job_idx (default: all) of the batch; rows of the result follow job_idx."""
    import cupy

    t_start = time.perf_counter()
    job_idx = np.arange(batch.n) if job_idx is None else np.asarray(job_idx, np.int64)
    m = len(job_idx)
    budget = default_gpu_mem() if gpu_mem is None else int(gpu_mem)
    s = batch.scoring
    q, e, q2, e2 = _swapped_gaps(s)
    mat = np.ascontiguousarray(s.mat, np.int8).reshape(-1)
    qlen = np.diff(batch.qoff).astype(np.int32)[job_idx]
    tlen = np.diff(batch.toff).astype(np.int32)[job_idx]
    w = np.asarray(batch.w, np.int32)[job_idx]
    flag = np.asarray(batch.flag, np.int32)[job_idx]
    res = _reset_results(m)
    ncig = np.zeros(m, np.int64)
    early_all = -int(mat[1:].min()) > 2 * (q + e)   # ksw2_extd2_sse.c:96-100 (min over mat[1..])
    live = np.flatnonzero((qlen > 0) & (tlen > 0)) if not early_all else np.zeros(0, np.int64)
    stats = {"jobs": m, "jobs_gpu": len(live), "chunks": 0}
    chunks_out: list[np.ndarray] = []
    src_start = np.zeros(m, np.int64)
    if len(live):
        mod = load_module("ksw_extd2.cu")
        k_size = mod.get_function("ksw_extd2_size")
        k_dp = {(nw, sm): mod.get_function(f"ksw_extd2_dp_w{nw}_{'smem' if sm else 'gmem'}")
                for nw in (1, 4, 16) for sm in (True, False)}
        k_tb = mod.get_function("ksw_extd2_tb")
        k_pack = mod.get_function("ksw_extd2_pack")
        i32, i64 = np.int32, np.int64
        t0 = time.perf_counter()
        # whole-call device arrays, indexed by local job number 0..m-1
        d_qseq = cupy.asarray(np.ascontiguousarray(batch.qseq, np.uint8))
        d_tseq = cupy.asarray(np.ascontiguousarray(batch.tseq, np.uint8))
        d_qst = cupy.asarray(np.asarray(batch.qoff, np.int64)[job_idx])
        d_tst = cupy.asarray(np.asarray(batch.toff, np.int64)[job_idx])
        d_qlen, d_tlen, d_w = cupy.asarray(qlen), cupy.asarray(tlen), cupy.asarray(w)
        d_zd = cupy.asarray(np.asarray(batch.zdrop, np.int32)[job_idx])
        d_eb = cupy.asarray(np.asarray(batch.end_bonus, np.int32)[job_idx])
        d_flag = cupy.asarray(flag)
        d_mat = cupy.asarray(mat)
        d_res = cupy.zeros(10 * m, np.int32)
        d_ncig = cupy.zeros(m, np.int32)
        # sizes of the live jobs
        nl = len(live)
        d_live = cupy.asarray(live.astype(np.int32))
        d_db = cupy.empty(nl, np.int64)
        d_mw = cupy.empty(nl, np.int32)
        k_size(((nl + 127) // 128,), (128,), (d_qlen[d_live], d_tlen[d_live], d_w[d_live], i32(nl), d_db, d_mw))
        dir_bytes = np.zeros(m, np.int64)
        width = np.zeros(m, np.int64)
        dir_bytes[live] = cupy.asnumpy(d_db)
        width[live] = cupy.asnumpy(d_mw)
        score_only = (flag & KSW_EZ_SCORE_ONLY) != 0
        lg = _ring_lg(width)
        need = _job_bytes(qlen, tlen, dir_bytes, lg, score_only)
        stats["t_prep"] = time.perf_counter() - t0
        # largest band area first; the largest jobs get a team of warps (critical path)
        cells = band_cells(qlen, tlen, w)
        order = live[np.argsort(-cells[live], kind="stable")]
        steps = (width + 127) // 128
        big = cells > BIG_JOB_SHARE * cells[live].sum()
        team = np.where(big & (steps >= 24), 16, np.where(big & (steps >= 6), 4, 1))
        stats["jobs_per_team_size"] = {int(t): int((team[live] == t).sum()) for t in (1, 4, 16)}
        pos = 0
        streams = {}
        while pos < len(order):
            csum = np.cumsum(need[order[pos:]])
            cnt = max(1, int(np.searchsorted(csum, budget, side="right")))
            chunk = order[pos:pos + cnt]
            pos += cnt
            stats["chunks"] += 1
            # arenas and per-job offsets of this chunk
            db = np.where(score_only[chunk], 0, dir_bytes[chunk])
            diag = (qlen[chunk] + tlen[chunk]).astype(np.int64)
            ring = np.where(lg[chunk] > SMEM_MAX_LG, RING_BYTES_PER_SLOT << lg[chunk].astype(np.int64), 0)
            offs = {}
            for name, size in (("dir", db), ("doff", diag), ("cig", diag + 2), ("ring", ring)):
                o = np.zeros(m, np.int64)
                o[chunk] = np.cumsum(size) - size
                offs[name] = (cupy.asarray(o), int(size.sum()))
            d_dir = cupy.empty(max(offs["dir"][1], 16), np.uint8)
            d_doff = cupy.empty(max(offs["doff"][1], 1), np.uint32)
            d_cig = cupy.empty(max(offs["cig"][1], 1), np.uint32)
            d_ring = cupy.empty(max(offs["ring"][1], 16), np.uint8)
            d_lg = cupy.asarray(lg)
            cupy.cuda.Device().synchronize()  # the copies above ran on the legacy stream
            t_dp = time.perf_counter()
            # one DP launch per ring size, each on its own stream
            keep = []  # job lists allocated on those streams, alive until they are synchronized
            classes = {}
            for nw in np.unique(team[chunk]):
                for L in np.unique(lg[chunk][team[chunk] == nw]):
                    sel = chunk[(lg[chunk] == L) & (team[chunk] == nw)]
                    key = (int(nw), int(L) if L <= SMEM_MAX_LG else -1)
                    classes.setdefault(key, []).append(sel)
            for key, parts in sorted(classes.items(), key=lambda kv: (-kv[0][0], -kv[0][1])):
                nw, L = key
                sel = np.concatenate(parts)
                sel = sel[np.argsort(-cells[sel], kind="stable")]
                smem = L >= 0
                fn = k_dp[(nw, smem)]
                if nw > 1:   # one job per block
                    tpb, shm = 32 * nw, (RING_BYTES_PER_SLOT << L) if smem else 0
                elif smem:   # several jobs per block, a warp each
                    tpb = 32 * max(1, min(8, SMEM_PER_BLOCK // (RING_BYTES_PER_SLOT << L)))
                    shm = tpb // 32 * (RING_BYTES_PER_SLOT << L)
                else:
                    tpb, shm = 32 * GMEM_WARPS_PER_BLOCK, 0
                if shm > 48 * 1024:
                    fn.max_dynamic_shared_size_bytes = shm
                jobs_per_block = tpb // (32 * nw)
                st = streams.setdefault(key, cupy.cuda.Stream(non_blocking=True))
                with st:
                    d_sel = cupy.asarray(sel.astype(np.int32))
                    keep.append(d_sel)
                    fn(((len(sel) + jobs_per_block - 1) // jobs_per_block,), (tpb,),
                       (d_sel, i32(len(sel)), i32(max(L, 0)), d_qseq, d_qst, d_qlen, d_tseq, d_tst, d_tlen,
                        d_w, d_zd, d_flag, offs["dir"][0], d_dir, offs["doff"][0], d_doff, offs["ring"][0], d_lg,
                        d_ring, d_mat, i32(q), i32(e), i32(q2), i32(e2), d_res, i32(m)),
                       shared_mem=shm)
            for st in streams.values():
                st.synchronize()
            stats["t_dp"] = stats.get("t_dp", 0.0) + time.perf_counter() - t_dp
            # backtrack and CIGARs
            d_chunk = cupy.asarray(chunk.astype(np.int32))
            nc = len(chunk)
            k_tb(((nc + 127) // 128,), (128,),
                 (d_chunk, i32(nc), d_qlen, d_tlen, d_w, d_eb, d_flag, offs["dir"][0], d_dir, offs["doff"][0],
                  d_doff, offs["cig"][0], d_cig, d_ncig, d_res, i32(m)))
            cn = d_ncig[d_chunk].astype(np.int64)
            d_out_off = cupy.cumsum(cn) - cn
            total = int(cn.sum())
            d_out = cupy.empty(max(total, 1), np.uint32)
            k_pack(((nc + 127) // 128,), (128,),
                   (d_chunk, i32(nc), d_flag, offs["cig"][0], d_cig, d_ncig, d_out_off, d_out))
            base = sum(len(c) for c in chunks_out)
            src_start[chunk] = base + cupy.asnumpy(d_out_off)
            ncig[chunk] = cupy.asnumpy(cn)
            chunks_out.append(cupy.asnumpy(d_out[:total]))
            del d_dir, d_doff, d_cig, d_ring
        h_res = cupy.asnumpy(d_res).reshape(10, m)
        for i, name in enumerate(FIELDS):
            res[name][live] = h_res[i][live].astype(res[name].dtype)
    coff = np.zeros(m + 1, np.int64)
    np.cumsum(ncig, out=coff[1:])
    total = int(coff[-1])
    allc = np.concatenate(chunks_out) if chunks_out else np.zeros(0, np.uint32)
    gather = np.repeat(src_start - coff[:-1], ncig) + np.arange(total, dtype=np.int64)
    cigar = allc[gather].astype(np.uint32) if total else np.zeros(0, np.uint32)
    stats["t_total"] = time.perf_counter() - t_start
    last_stats.clear()
    last_stats.update(stats)
    return ResultBatch(coff=coff, cigar=cigar, **res)


__all__ = ["supports", "run", "default_gpu_mem", "REJECT_KERNEL", "REJECT_MEMORY", "REASONS"]
