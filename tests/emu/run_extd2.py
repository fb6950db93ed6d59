"""Runs the real ksw_extd2 launcher (gpuext/backends/cuda/ksw_extd2.py) on the CPU emulator and
compares every result field and CIGAR with the stock ksw2 code (gpuext.backends.cpu); prints the
differences and exits 1 on any, or when a DP kernel named by --expect was not launched.

    PYTHONPATH=tests/emu/fakecupy:. python3 -m tests.emu.run_extd2 --presets sr,asm5 --jobs 100 --seed 11

Started by tests/kernel/test_ksw_extd2_emulated.py in a process of its own, so that the fake CuPy
(tests/emu/fakecupy) replaces the real one here only. Jobs: one batch per preset from random_jobs of
tests/kernel/test_ksw_extd2.py (the GPU test's generator; its describe_diff reports), plus the
--edges and --long jobs below. The launcher's knobs come from the environment as on a GPU (every
GPUEXT_KSW_* variable set is printed with the seed); --big-share sets its BIG_JOB_SHARE.
GX_EMU_REVERSE=1 makes the emulator run a block's threads in reverse order.
--chunked runs a shuffled subset with some sequences cut to length 0 under a memory budget that cuts
the call into chunks, then in one chunk (as test_chunks_subsets_and_empty_jobs_match_ksw2).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np


def long_jobs(rng, batch, n: int, length: int):
    """n jobs of two length-bp sequences alike for their first 300 bases, the whole matrix as band:
    rings sized for the whole length (2**15 slots, in global memory, from 16353 bp; 16 warps from
    about 3040 bp), while a Z-drop of 20 (above the short-gap opening q+e of map-ont, map-hifi and
    sr, below every preset's long-gap opening q2) ends the DP a few dozen anti-diagonals after the
    likeness does, whatever the path. Exact maximum (APPROX_MAX jobs Z-drop only with APPROX_DROP),
    every other job SCORE_ONLY (no direction arena)."""
    from gpuext.engine.jobs import KERNEL_EXTD2, KSW_EZ_EXTZ_ONLY, KSW_EZ_SCORE_ONLY, JobBatch

    qs, ts = [], []
    for _ in range(n):
        t = rng.integers(0, 4, length).astype(np.uint8)
        qs.append(np.r_[t[:300], rng.integers(0, 4, length - 300)].astype(np.uint8))
        ts.append(t)
    off = np.arange(n + 1, dtype=np.int64) * length
    flag = np.where(np.arange(n) % 2, KSW_EZ_EXTZ_ONLY, KSW_EZ_SCORE_ONLY).astype(np.int32)
    return JobBatch(batch.scoring, np.concatenate(qs), off, np.concatenate(ts), off.copy(),
                    np.full(n, KERNEL_EXTD2, np.int8), np.full(n, -1, np.int32), np.full(n, 20, np.int32),
                    np.full(n, -1, np.int32), flag)


def _extd2_jobs(batch, qs, ts, w, flag, zdrop: int, end_bonus: int):
    """ksw_extd2 jobs of these sequences, bands and flags, with the batch's scoring, one Z-drop and one
    end bonus."""
    from gpuext.engine.jobs import KERNEL_EXTD2, JobBatch

    return JobBatch.of(batch.scoring, qs, ts, KERNEL_EXTD2, w, zdrop, end_bonus, flag)


def cover_matrix(rng, b) -> np.ndarray:
    """Bands that cover each job's matrix: -1 (no band) for about 30% of the jobs, max(qlen, tlen) - 1
    (the least that covers it) for the rest."""
    return np.where(rng.random(b.n) < 0.3, -1, np.maximum(b.qlen(), b.tlen()) - 1).astype(np.int32)


def exact_full_band(rng, b) -> None:
    """b's jobs as ksw_extd2_dp_fbx takes them (second-pass gap fills, whole-matrix extensions): flags
    0, EXTZ_ONLY, REV_CIGAR or both, drawn per job, and bands that cover the matrix (cover_matrix)."""
    from gpuext.engine.jobs import KSW_EZ_EXTZ_ONLY, KSW_EZ_REV_CIGAR

    b.flag = rng.choice([0, KSW_EZ_EXTZ_ONLY, KSW_EZ_REV_CIGAR, KSW_EZ_EXTZ_ONLY | KSW_EZ_REV_CIGAR], b.n)
    b.flag = b.flag.astype(np.int32)
    b.w = cover_matrix(rng, b)


def repeat_jobs(rng, batch, n: int, zdrop: int, end_bonus: int):
    """n low-complexity jobs (homopolymers and repeats of period 2-4, a few bases changed or not, of
    20-700 bp each way, lengths that differ): many cells of one anti-diagonal share their H, so the
    exact maximum's order among equal values (slot groups, en0, the tail, the first slot) decides
    max_t and the Z-drop; flags as --exact-full-band draws them."""
    qs, ts = [], []
    for _ in range(n):
        unit = rng.integers(0, 4, int(rng.integers(1, 5))).astype(np.uint8)
        lq, lt = (int(x) for x in rng.integers(20, 700, 2))
        q, t = np.resize(unit, lq), np.resize(np.roll(unit, int(rng.integers(0, len(unit)))), lt)
        for x in (q, t):
            k = int(rng.integers(0, 4))
            x[rng.integers(0, len(x), k)] = rng.integers(0, 4, k)
        qs.append(q), ts.append(t)
    return _extd2_jobs(batch, qs, ts, np.full(n, -1), np.zeros(n), zdrop, end_bonus)


def zdrop_jobs(rng, batch, n: int, end_bonus: int, max_len: int = 900):
    """n jobs alike for their first 30-300 bases and unrelated after (300-max_len bp each way), with a Z-drop
    of 5-60 drawn per job: many anti-diagonals of the unrelated part are tested, their maxima are often
    tied, and which slot wins moves the Z-drop's gap term (max_t, |tl - ql|)."""
    qs, ts = [], []
    for _ in range(n):
        k, lq, lt = int(rng.integers(30, 300)), int(rng.integers(300, max_len)), int(rng.integers(300, max_len))
        t = rng.integers(0, 4, lt).astype(np.uint8)
        qs.append(np.r_[t[:k], rng.integers(0, 4, lq - k)].astype(np.uint8)), ts.append(t)
    b = _extd2_jobs(batch, qs, ts, np.full(n, -1), np.zeros(n), 0, end_bonus)
    b.zdrop = rng.integers(5, 61, n).astype(np.int32)
    return b


def band_jobs(rng, batch, n: int, zdrop: int, end_bonus: int):
    """n band-limited extensions as minimap2 makes them (the exact flag sets of the GPU test, a band of
    w 100-960 on 800-2400 bp sequences with ONT-like errors, the preset's Z-drop and end bonus): rings of
    2**10 slots, so that the middle team takes them (with BIG_JOB_SHARE 0), two anti-diagonals per round
    where w + 33 <= 992 (dp_team's PAIRS), one per round above."""
    from tests.kernel.test_ksw_extd2 import _mutate

    def draw():
        t = rng.integers(0, 4, int(rng.integers(800, 2400))).astype(np.uint8)
        q = _mutate(rng, t, float(rng.uniform(0.03, 0.2)), 0.01)
        q = q[: int(rng.integers(len(q) // 2, len(q) + 1))] if rng.random() < 0.3 else q
        return q, t, int(rng.choice([100, 500, 751, 900, 959, 960, 961]))
    return exact_extensions(batch, n, draw, zdrop, end_bonus)


def exact_extensions(batch, n: int, draw, zdrop: int, end_bonus: int):
    """n extensions of (query, target, w) from draw(), one after another, with the exact flag sets of the
    GPU test in turn (RIGHT among them; GENERIC_SC added when the batch has it), one Z-drop and end
    bonus."""
    from gpuext.engine.jobs import KSW_EZ_APPROX_MAX, KSW_EZ_GENERIC_SC
    from tests.kernel.test_ksw_extd2 import FLAG_SETS

    generic = int(batch.flag[0]) & KSW_EZ_GENERIC_SC
    exact = [f for f in FLAG_SETS if not f & KSW_EZ_APPROX_MAX]
    qs, ts, w, flag = [], [], [], []
    for i in range(n):
        q, t, wi = draw()
        qs.append(np.asarray(q, np.uint8)), ts.append(t), w.append(wi), flag.append(exact[i % len(exact)] | generic)
    return _extd2_jobs(batch, qs, ts, w, flag, zdrop, end_bonus)


def band_exit_jobs(rng, batch, n: int, zdrop: int, end_bonus: int):
    """n band-limited extensions as band_jobs draws them, with the target cut to a share of its length and
    the query left whole, so that the query is longer than the target by more than w: the band meets the
    target's end while its lower edge still moves by half a slot per anti-diagonal, and the last ones hold a
    single slot, twice with the same en0 (line 329's old H[en0 - 1] is then of an anti-diagonal before)."""
    from tests.kernel.test_ksw_extd2 import _mutate

    def draw():
        wi = int(rng.choice([100, 300, 500, 751]))
        q = rng.integers(0, 4, int(rng.integers(wi + 900, wi + 2400))).astype(np.uint8)
        t = np.asarray(_mutate(rng, q, float(rng.uniform(0.03, 0.2)), 0.01), np.uint8)
        return q, t[: max(1, len(q) - wi - int(rng.integers(1, 200)))], wi
    return exact_extensions(batch, n, draw, zdrop, end_bonus)


def narrow_band_jobs(rng, batch, n: int, zdrop: int, end_bonus: int):
    """n band-limited extensions with narrow bands (w 32-120) on 150-900 bp sequences of 5-25% errors,
    a third with lengths that differ by up to 2w (band exits), the exact flag sets of the GPU test
    (RIGHT among them): many band-edge cells read padding slots, so the stale-score rule and the
    first-slot constants decide cells of the band (ksw_extd2_dp_fbb's region; with BIG_JOB_SHARE 0 they
    would get a team)."""
    from tests.kernel.test_ksw_extd2 import _mutate

    def draw():
        lt, wi = int(rng.integers(150, 900)), int(rng.integers(32, 121))
        t = rng.integers(0, 4, lt).astype(np.uint8)
        q = np.asarray(_mutate(rng, t, float(rng.uniform(0.05, 0.25)), 0.01), np.uint8)
        if rng.random() < 0.33:
            q = q[: max(1, len(q) - int(rng.integers(0, 2 * wi)))]
        return q, t, wi
    return exact_extensions(batch, n, draw, zdrop, end_bonus)


def edge_jobs(rng, batch, zdrop: int, end_bonus: int):
    """For each ring of 2**lg slots, lg = 6..10 (the register kernels' rings), and each flag set of the
    GPU test, a job whose band is among the widest of that ring (a full ring, where slot aliasing
    would show): the whole matrix with the shorter sequence m bp, or a band of m on longer ones."""
    from gpuext.backends.cuda import ksw_extd2 as gpu
    from gpuext.engine.jobs import KSW_EZ_GENERIC_SC
    from tests.kernel.test_ksw_extd2 import FLAG_SETS, _mutate

    generic = int(batch.flag[0]) & KSW_EZ_GENERIC_SC   # GENERIC_SC is all or nothing in a batch
    qs, ts, w, flag = [], [], [], []
    for lg in range(6, 11):
        for f in FLAG_SETS:
            m = (1 << lg) - 48 - int(rng.integers(0, 16))   # min(qlen, tlen, w + 1) of the widest bands
            full = rng.random() < 0.5
            lq, lt = (m, m + int(rng.integers(0, m // 4 + 1))) if full else (int(m * rng.uniform(1, 1.3)),) * 2
            t = rng.integers(0, 4, lt).astype(np.uint8)
            q = _mutate(rng, t, 0.05, 0)[:lq]
            q = np.r_[q, rng.integers(0, 4, lq - len(q))].astype(np.uint8)
            if rng.random() < 0.5:
                q, t = t, q
            qs.append(q), ts.append(t), w.append(-1 if full else m - 1), flag.append(f | generic)
            assert gpu._ring_lg(gpu._bounds(np.array([len(q)]), np.array([len(t)]), np.array(w[-1:]))[1])[0] == lg
    return _extd2_jobs(batch, qs, ts, w, flag, zdrop, end_bonus)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--presets", default="map-ont,map-hifi,asm5,sr", help="comma-separated presets, a batch each")
    ap.add_argument("--jobs", type=int, default=100, help="random jobs per batch")
    ap.add_argument("--max-len", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--transition", type=int, default=0, help="GENERIC_SC with this transition score")
    ap.add_argument("--edges", action="store_true", help="ring-size edge jobs (edge_jobs)")
    ap.add_argument("--long", type=int, nargs=2, metavar=("N", "LEN"), help="N more jobs of LEN bp (long_jobs)")
    ap.add_argument("--bands", type=int, metavar="N", help="N band-limited extensions (band_jobs)")
    ap.add_argument("--band-exits", type=int, metavar="N", help="N band-limited extensions whose band leaves the "
                    "target's end (band_exit_jobs)")
    ap.add_argument("--narrow-bands", type=int, metavar="N", help="N narrow band-limited extensions (narrow_band_jobs)")
    ap.add_argument("--big-share", type=float, help="the launcher's BIG_JOB_SHARE (0: teams for every wide job)")
    ap.add_argument("--chunked", action="store_true", help="subset, empty sequences, a budget of many chunks")
    ap.add_argument("--full-band", action="store_true",
                    help="every job APPROX_MAX (half with REV_CIGAR) with a band covering the matrix")
    ap.add_argument("--exact-full-band", action="store_true",
                    help="every job exact (flags 0, EXTZ_ONLY, REV_CIGAR) with a band covering the matrix, and as many "
                         "low-complexity ones (repeat_jobs) and ones with a small Z-drop (zdrop_jobs)")
    ap.add_argument("--expect", default="", help="comma-separated DP kernels (w1_smem, reg8x2_e, ...) that must run")
    ap.add_argument("--pinned", action="store_true",
                    help="the job arrays in page-locked memory (ksw_extd2.pin), as the engine exports them with "
                         "$GPUEXT_PINNED_JOBS=1")
    ap.add_argument("--waves", type=int, default=0, help="upload waves the calls must have taken (0: not checked)")
    a = ap.parse_args()

    import cupy

    if not getattr(cupy, "emulated", False):
        sys.exit(f"run_extd2.py: got the real CuPy ({cupy.__file__}); put tests/emu/fakecupy first on PYTHONPATH")
    from gpuext.backends import cpu
    from gpuext.backends.cuda import ksw_extd2 as gpu
    from gpuext.engine.jobs import KSW_EZ_APPROX_MAX, KSW_EZ_REV_CIGAR, JobBatch
    from tests.kernel.test_ksw_extd2 import PRESETS, _with_empty_sequences, describe_diff, random_jobs

    if a.big_share is not None:
        gpu.BIG_JOB_SHARE = a.big_share
    knobs = {k: v for k, v in sorted(os.environ.items()) if k.startswith("GPUEXT_KSW_") or k == "GX_EMU_REVERSE"}
    print(f"seed {a.seed}, knobs {knobs or 'default'}")
    problems, seen = [], set()
    for pi, preset in enumerate(a.presets.split(",")):
        rng = np.random.default_rng([a.seed, pi])
        b = random_jobs(rng, preset, a.jobs, max_len=a.max_len, transition=a.transition)
        if a.edges:
            b = JobBatch.concat([b, edge_jobs(rng, b, *PRESETS[preset][6:8])])   # its Z-drop and end bonus
        if a.long:
            b = JobBatch.concat([b, long_jobs(rng, b, *a.long)])
        if a.bands:
            b = JobBatch.concat([b, band_jobs(rng, b, a.bands, *PRESETS[preset][6:8])])
        if a.band_exits:
            b = JobBatch.concat([b, band_exit_jobs(rng, b, a.band_exits, *PRESETS[preset][6:8])])
        if a.narrow_bands:
            b = JobBatch.concat([b, narrow_band_jobs(rng, b, a.narrow_bands, *PRESETS[preset][6:8])])
        if a.full_band:   # first-pass gap fills, as ksw_extd2_dp_fb* takes them
            b.flag = np.where(rng.random(b.n) < 0.5, KSW_EZ_APPROX_MAX, KSW_EZ_APPROX_MAX | KSW_EZ_REV_CIGAR)
            b.flag = b.flag.astype(np.int32)
            b.w = cover_matrix(rng, b)
        if a.exact_full_band:   # second-pass gap fills and whole-matrix extensions, as ksw_extd2_dp_fbx takes them
            b = JobBatch.concat([b, repeat_jobs(rng, b, b.n, *PRESETS[preset][6:8]),
                                 zdrop_jobs(rng, b, b.n, PRESETS[preset][7])])
            exact_full_band(rng, b)
        runs = [(None, None)]   # (every job: no job list)
        if a.chunked:
            b = _with_empty_sequences(rng, b)
            idx = rng.permutation(b.n)[: b.n * 3 // 4]
            dir_ub, lg = gpu._upper_bytes(b.qlen(), b.tlen(), b.w)
            need = gpu._job_bytes(b.qlen(), b.tlen(), dir_ub, lg, np.zeros(b.n, bool))
            # the largest job's bound (ksw2's allocation): every job fits, the call is cut in many chunks
            runs = [(idx, int(need.max())), (idx, None)]
        if a.pinned:   # (upload waves need both sequence arrays there)
            b = gpu.pin(b)
        assert (gpu.supports(b) == 0).all()
        want = cpu.run(b, n_threads=2)
        for idx, budget in runs:
            cupy.launched.clear()
            t = time.perf_counter()
            got = gpu.run(b, idx, gpu_mem=budget)
            st = gpu.last_stats
            idx = np.arange(b.n) if idx is None else idx
            d = want.take(idx).diff(got)
            dp = {k.removeprefix("ksw_extd2_dp_"): n for k, n in sorted(cupy.launched.items()) if "_dp_" in k}
            seen.update(dp)
            print(f"{preset}: {len(idx)} jobs ({int(b.cells()[idx].sum())} cells), {st['chunks']} chunks, "
                  f"{time.perf_counter() - t:.1f} s, DP launches {dp}: {len(d)} differences")
            if a.waves and st.get("waves") != a.waves:
                problems.append(f"{preset}: {st.get('waves')} upload waves, expected {a.waves}")
            if d:
                problems.append(f"{preset}: {len(d)} differences\n" + describe_diff(b.subset(idx), want.take(idx), got))
            if (st["chunks"] <= 3) if budget else (st["chunks"] != 1):   # the GPU test's expectations
                problems.append(f"{preset}: {st['chunks']} chunks under a budget of {budget or 'the default'}")
    missing = set(filter(None, a.expect.split(","))) - seen
    if missing:
        problems.append(f"expected DP kernels not launched: {sorted(missing)}")
    reg = sorted(k for k in seen if k.startswith("reg"))
    if knobs.get("GPUEXT_KSW_REG") == "0" and reg:   # the knob's "off"
        problems.append(f"register kernels launched with GPUEXT_KSW_REG=0: {reg}")
    print("\n".join(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
