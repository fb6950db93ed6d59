"""Launcher of kernels/ksw_extd2.cu: minimap2's ksw_extd2_sse over a JobBatch on one GPU, bit-exact.

`supports(batch)` says per job whether the kernel takes it (0) or why not; `run(batch, job_idx)`
computes the jobs it takes and returns their ResultBatch (rows in job_idx order), CIGARs included.
The direction matrices stay on the GPU: the DP, the backtrack and the CIGAR packing all run there,
and only sequences, per-job parameters, the ksw_extz_t fields and the CIGARs cross the bus.

Work plan of one `run`:
1. jobs that ksw2 returns from before any DP (qlen or tlen <= 0; a matrix with
   -min_sc > 2(q+e), ksw2_extd2_sse.c:76 and :100) get ksw_reset_extz's values on the host;
2. sizes on the host: ksw2's own direction allocation bounds each job's compact direction bytes,
   and n_col*16 its widest band, which sizes its ring (no device pass, no round trip);
3. jobs are ordered by band area, largest first, and cut into chunks that fit the memory budget;
4. per chunk, one DP launch per (warps per job, ring size) class, each on its own stream and
   followed there by its backtrack (`ksw_extd2_tb`, a warp per job): a warp per job, or 4 or 16
   warps for the few jobs large enough to be the critical path; rings of up to 16384 slots in
   shared memory, wider ones in global memory; then the CIGAR packing (`ksw_extd2_pack`) on the
   main stream, one synchronisation, and the copies back.

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
SMEM_PER_SM = 228 * 1024    # shared memory of an SM (sm_90); each block reserves 1 KiB of it
W1_BLOCKS_PER_SM = 3        # blocks of the one-warp kernel per SM (its __launch_bounds__)
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


_streams: dict = {}


def _stream(key):
    """A non-blocking stream per (device, key), kept across calls."""
    import cupy

    k = (cupy.cuda.Device().id, key)
    st = _streams.get(k)
    if st is None:
        st = _streams[k] = cupy.cuda.Stream(non_blocking=True)
    return st


_pinned: dict = {}


def _upload_pinned(a: np.ndarray, stream, slot: int):
    """a (uint8) on the device, copied through a pinned host buffer kept per (device, slot) and
    grown as needed. The copy is asynchronous on stream; the buffer is reused only by a later
    call, after this one's final synchronisation."""
    import cupy

    a = np.ascontiguousarray(a, np.uint8)
    n = max(a.nbytes, 1)
    key = (cupy.cuda.Device().id, slot)
    buf = _pinned.get(key)
    if buf is None or buf.size < n:
        size = max(n, 1 << 20) * 5 // 4
        buf = _pinned[key] = np.frombuffer(cupy.cuda.alloc_pinned_memory(size), np.uint8, size)
    h = buf[:n]
    h[:a.nbytes] = a
    d = cupy.empty(n, np.uint8)
    d.set(h, stream=stream)
    return d


def _w1_blocks() -> int:
    """Blocks of the one-warp kernel per SM (its register cap and shared memory per block)."""
    b = int(os.environ.get("GPUEXT_KSW_W1_BLOCKS", W1_BLOCKS_PER_SM))
    return b if b in (2, 3, 4) else W1_BLOCKS_PER_SM


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
    early_all = -int(mat[1:].min()) > 2 * (q + e)   # ksw2_extd2_sse.c:96-100 (min over mat[1..])
    live = np.flatnonzero((qlen > 0) & (tlen > 0)) if not early_all else np.zeros(0, np.int64)
    stats = {"jobs": m, "jobs_gpu": len(live), "chunks": 0, "t_dp": 0.0, "t_tb": 0.0}
    coff = np.zeros(m + 1, np.int64)
    cigar = np.zeros(0, np.uint32)
    if len(live):
        nblk = _w1_blocks()
        mod = load_module("ksw_extd2.cu")
        k_dp = {(nw, sm): mod.get_function(f"ksw_extd2_dp_w{nw}_{'smem' if sm else 'gmem'}")
                for nw in (1, 4, 16) for sm in (True, False)}
        if nblk != W1_BLOCKS_PER_SM:
            k_dp[(1, True)] = mod.get_function(f"ksw_extd2_dp_w1_smem_b{nblk}")
        smem_per_block = SMEM_PER_SM // nblk - 1024
        k_tb = mod.get_function("ksw_extd2_tb")
        k_pack = mod.get_function("ksw_extd2_pack")
        i32 = np.int32
        t0 = time.perf_counter()
        # sizes without a device pass: ksw2's own direction allocation bounds the compact layout
        # (every anti-diagonal's aligned width is <= n_col*16), and n_col*16 bounds the band
        dir_bytes, width = _bounds(qlen, tlen, w)
        score_only = (flag & KSW_EZ_SCORE_ONLY) != 0
        lg = _ring_lg(width)
        need = _job_bytes(qlen, tlen, dir_bytes, lg, score_only)
        cells = band_cells(qlen, tlen, w)
        order = live[np.argsort(-cells[live], kind="stable")]
        steps = (width + 127) // 128
        big = cells > BIG_JOB_SHARE * cells[live].sum()
        team = np.where(big & (steps >= 24), 16, np.where(big & (steps >= 6), 4, 1))
        stats["jobs_per_team_size"] = {int(t): int((team[live] == t).sum()) for t in (1, 4, 16)}
        stats["t_plan"] = time.perf_counter() - t0
        main = _stream("main")
        with main:
            # whole-call device arrays, indexed by local job number 0..m-1; the sequences go
            # through a pinned staging buffer (asynchronous DMA at full bus speed)
            d_qseq = _upload_pinned(batch.qseq, main, 0)
            d_tseq = _upload_pinned(batch.tseq, main, 1)
            h32 = np.stack([qlen, tlen, w, np.asarray(batch.zdrop, np.int32)[job_idx],
                            np.asarray(batch.end_bonus, np.int32)[job_idx], flag, lg.astype(np.int32)])
            d32 = cupy.asarray(h32)
            d_qlen, d_tlen, d_w, d_zd, d_eb, d_flag, d_lg = (d32[i] for i in range(7))
            d_mat = cupy.asarray(mat)
            d_res = cupy.zeros(10 * m, np.int32)
        qst = np.asarray(batch.qoff, np.int64)[job_idx]
        tst = np.asarray(batch.toff, np.int64)[job_idx]
        stats["t_prep"] = time.perf_counter() - t0
        chunk_out = []   # (jobs of the chunk, ncig per job of the call, packed CIGARs in job order)
        pos = 0
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
            h64 = np.zeros((6, m), np.int64)
            h64[0], h64[1] = qst, tst
            sizes = []
            for row, size in enumerate((db, diag, diag + 2, ring), start=2):
                h64[row, chunk] = np.cumsum(size) - size
                sizes.append(int(size.sum()))
            t_c = time.perf_counter()
            # launch classes (warps per job, ring in shared memory or not), largest jobs first
            classes = {}
            for nw in np.unique(team[chunk]):
                for L in np.unique(lg[chunk][team[chunk] == nw]):
                    sel = chunk[(lg[chunk] == L) & (team[chunk] == nw)]
                    key = (int(nw), int(L) if L <= SMEM_MAX_LG else -1)
                    classes.setdefault(key, []).append(sel)
            plan = []
            for key, parts in sorted(classes.items(), key=lambda kv: (-kv[0][0], -kv[0][1])):
                sel = np.concatenate(parts)
                plan.append((key, sel[np.argsort(-cells[sel], kind="stable")]))
            lists = np.concatenate([p[1] for p in plan]).astype(np.int32)
            with main:
                d64 = cupy.asarray(h64)
                d_lists = cupy.asarray(lists)
                d_dir = cupy.empty(max(sizes[0], 16), np.uint8)
                d_doff = cupy.empty(max(sizes[1], 1), np.uint32)
                d_cig = cupy.empty(max(sizes[2], 1), np.uint32)
                d_ring = cupy.empty(max(sizes[3], 16), np.uint8)
                d_ncig = cupy.zeros(m, np.int32)
                ev_in = main.record()
            d_qst, d_tst, d_diroff, d_doffoff, d_cigoff, d_ringoff = (d64[i] for i in range(6))
            stats["t_chunk_plan"] = stats.get("t_chunk_plan", 0.0) + time.perf_counter() - t_c
            ev = []
            off = 0
            for key, sel in plan:
                nw, L = key
                smem = L >= 0
                fn = k_dp[(nw, smem)]
                if nw > 1:   # one job per block
                    tpb, shm = 32 * nw, (RING_BYTES_PER_SLOT << L) if smem else 0
                elif smem:   # several jobs per block, a warp each
                    tpb = 32 * max(1, min(8, smem_per_block // (RING_BYTES_PER_SLOT << L)))
                    shm = tpb // 32 * (RING_BYTES_PER_SLOT << L)
                else:
                    tpb, shm = 32 * GMEM_WARPS_PER_BLOCK, 0
                if shm > 48 * 1024:
                    fn.max_dynamic_shared_size_bytes = shm
                jobs_per_block = tpb // (32 * nw)
                n = len(sel)
                d_sel = d_lists[off:off + n]
                off += n
                st = _stream(key)
                st.wait_event(ev_in)
                with st:
                    ev_a = st.record()
                    fn(((n + jobs_per_block - 1) // jobs_per_block,), (tpb,),
                       (d_sel, i32(n), i32(max(L, 0)), d_qseq, d_qst, d_qlen, d_tseq, d_tst, d_tlen,
                        d_w, d_zd, d_flag, d_diroff, d_dir, d_doffoff, d_doff, d_ringoff, d_lg,
                        d_ring, d_mat, i32(q), i32(e), i32(q2), i32(e2), d_res, i32(m)),
                       shared_mem=shm)
                    ev_b = st.record()
                    # the backtrack of this class right away: it overlaps the other classes' DP
                    k_tb(((n + 3) // 4,), (128,),
                         (d_sel, i32(n), d_qlen, d_tlen, d_w, d_eb, d_flag, d_diroff, d_dir, d_doffoff,
                          d_doff, d_cigoff, d_cig, d_ncig, d_res, i32(m)))
                    ev_c = st.record()
                    main.wait_event(ev_c)
                ev.append((ev_a, ev_b, ev_c, key, n))
            t_launched = time.perf_counter()
            with main:
                # CIGARs of the chunk packed in job order (jobs outside the chunk have ncig 0)
                cn = d_ncig.astype(np.int64)
                d_out_off = cupy.cumsum(cn) - cn
                d_out = cupy.empty(max(sizes[2], 1), np.uint32)
                nc = len(chunk)
                d_chunk = d_lists  # every job of the chunk, in some order
                k_pack(((nc + 127) // 128,), (128,),
                       (d_chunk, i32(nc), d_flag, d_cigoff, d_cig, d_ncig, d_out_off, d_out))
                h_ncig = cupy.asnumpy(d_ncig, stream=main)   # waits for the chunk's work
                total = int(h_ncig.sum())
                h_out = cupy.asnumpy(d_out[:total], stream=main)
            stats["t_wait"] = stats.get("t_wait", 0.0) + time.perf_counter() - t_launched
            stats["t_dp"] += max(cupy.cuda.get_elapsed_time(ev_in, x[1]) for x in ev) / 1e3
            stats["t_tb"] += max(cupy.cuda.get_elapsed_time(x[1], x[2]) for x in ev) / 1e3
            stats["t_gpu"] = stats.get("t_gpu", 0.0) + max(cupy.cuda.get_elapsed_time(ev_in, x[2])
                                                             for x in ev) / 1e3
            # per launch class: (warps per job, ring log2 or -1 for global, jobs, DP ms, backtrack ms)
            stats.setdefault("classes", []).extend(
                (k[0], k[1], n, cupy.cuda.get_elapsed_time(a, b), cupy.cuda.get_elapsed_time(b, c))
                for a, b, c, k, n in ev)
            chunk_out.append((chunk, h_ncig, h_out))
            del d_dir, d_doff, d_cig, d_ring, d_out
        with main:
            h_res = cupy.asnumpy(d_res, stream=main).reshape(10, m)
        for i, name in enumerate(FIELDS):
            res[name][live] = h_res[i][live].astype(res[name].dtype)
        t1 = time.perf_counter()
        if len(chunk_out) == 1:
            ncig = chunk_out[0][1].astype(np.int64)
            np.cumsum(ncig, out=coff[1:])
            cigar = chunk_out[0][2]
        else:   # chunk c holds its jobs' CIGARs in job order: gather them
            ncig = np.zeros(m, np.int64)
            src_start = np.zeros(m, np.int64)
            base = 0
            for chunk, h_ncig, h_out in chunk_out:
                cn = h_ncig.astype(np.int64)
                ncig[chunk] = cn[chunk]
                src_start[chunk] = base + (np.cumsum(cn) - cn)[chunk]
                base += len(h_out)
            np.cumsum(ncig, out=coff[1:])
            total = int(coff[-1])
            allc = np.concatenate([c[2] for c in chunk_out])
            gather = np.repeat(src_start - coff[:-1], ncig) + np.arange(total, dtype=np.int64)
            cigar = allc[gather] if total else np.zeros(0, np.uint32)
        stats["t_post"] = time.perf_counter() - t1
    stats["t_total"] = time.perf_counter() - t_start
    last_stats.clear()
    last_stats.update(stats)
    return ResultBatch(coff=coff, cigar=cigar.astype(np.uint32, copy=False), **res)


__all__ = ["supports", "run", "default_gpu_mem", "REJECT_KERNEL", "REJECT_MEMORY", "REASONS"]
