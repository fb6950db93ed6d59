#!/usr/bin/env python3
"""GPU ksw_extd2 (or ksw_extz2) vs the stock ksw2 code on all CPU cores, over the same jobs, in one run.

Cells are ksw2's band cells (JobBatch.cells, |i-j| <= w). The GPU time is the wall time of
gpuext.backends.cuda.ksw_extd2.run: H2D copies, sizing, DP, backtrack, CIGAR packing and D2H
copies included (the kernel build, each kernel's first load and the first allocations are excluded by an
untimed warm-up run over the same jobs). The CPU time is gpuext.backends.cpu.run with one thread per
core, after an untimed warm-up run, the best of --repeat runs like the GPU side. Both results are
compared field by field. A recorded set of ksw_extz2 jobs (one gap cost, e.g. `-O4 -E2`) runs
gpuext.backends.cuda.ksw_extz2 instead.

Jobs: --jobs FILE.npz loads recorded JobBatch arrays (qseq qoff tseq toff kernel w zdrop end_bonus
flag mat q e q2 e2); otherwise realistic random map-ont jobs are drawn: first-pass gap fills
(APPROX_MAX, w 30001), right and left extensions (w 751, Z-drop 400, some with junk tails) and a few
exact second-pass gap fills, with ONT-like errors.

    python scripts/bench_ksw_extd2.py --cells 2e10
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gpuext.engine.jobs import (KERNEL_EXTD2, KERNEL_EXTZ2, KSW_EZ_APPROX_MAX, KSW_EZ_EXTZ_ONLY,  # noqa: E402
                                KSW_EZ_REV_CIGAR, KSW_EZ_RIGHT, JobBatch, Scoring)


def ont_matrix(a=2, b=4, sc_ambi=1) -> np.ndarray:
    mat = np.full((5, 5), -sc_ambi, np.int8)
    mat[:4, :4] = -b
    np.fill_diagonal(mat[:4, :4], a)
    return mat.reshape(-1)


def mutate(rng, t: np.ndarray, err: float) -> np.ndarray:
    """ONT-like copy of t: substitutions, insertions and deletions in about equal parts."""
    ev = rng.random(len(t))
    copies = np.ones(len(t), np.int64)
    copies[ev < err / 3] = 0                                   # deletion
    ins = (ev >= err / 3) & (ev < 2 * err / 3)
    copies[ins] += rng.geometric(0.6, ins.sum())               # insertion after the base
    out = np.repeat(t, copies)
    first = np.cumsum(copies) - copies
    extra = np.ones(len(out), bool)
    extra[first[copies > 0]] = False
    out[extra] = rng.integers(0, 4, extra.sum())
    sub = rng.random(len(out)) < err / 3
    out[sub] = (out[sub] + rng.integers(1, 4, sub.sum())) % 4
    return out.astype(np.uint8)


def random_jobs(rng, cells_target: float) -> JobBatch:
    qs, ts, W, Z, E, F = [], [], [], [], [], []
    cells = 0.0
    while cells < cells_target:
        kind = rng.random()
        err = rng.uniform(0.02, 0.12)
        if kind < 0.70:    # first-pass gap fill between anchors
            L = int(np.clip(rng.lognormal(np.log(220), 0.8), 1, 20000))
            w, zd, fl = 30001, 400, KSW_EZ_APPROX_MAX
        elif kind < 0.985:  # right / left extension of a read end
            L = int(np.clip(rng.lognormal(np.log(600), 1.0), 1, 10000))
            w, zd = 751, 400
            fl = KSW_EZ_EXTZ_ONLY if rng.random() < 0.5 else KSW_EZ_EXTZ_ONLY | KSW_EZ_RIGHT | KSW_EZ_REV_CIGAR
        else:              # exact second-pass gap fill
            L = int(np.clip(rng.lognormal(np.log(1500), 0.7), 1, 6000))
            w, zd, fl = 30001, 400, 0
        t = rng.integers(0, 4, L).astype(np.uint8)
        q = mutate(rng, t, err)
        if fl & KSW_EZ_EXTZ_ONLY:
            t = np.concatenate([t, rng.integers(0, 4, int(L * rng.uniform(0, 0.3))).astype(np.uint8)])
            if rng.random() < 0.4:  # a junk tail that makes the extension Z-drop
                cut = int(len(q) * rng.uniform(0.2, 0.9))
                q = np.concatenate([q[:cut], rng.integers(0, 4, len(q) - cut).astype(np.uint8)])
        if len(q) == 0:
            q = t[:1].copy()
        qs.append(q), ts.append(t), W.append(w), Z.append(zd), E.append(-1), F.append(fl)
        qq, tt = len(q), len(t)
        cells += qq * tt if w >= max(qq, tt) else min(qq, tt) * (2 * w + 1)
    return _batch(qs, ts, W, Z, E, F, Scoring(ont_matrix(), 4, 2, 24, 1))


def _batch(qs, ts, W, Z, E, F, scoring) -> JobBatch:
    return JobBatch.of(scoring, qs, ts, KERNEL_EXTD2, W, Z, E, F)


def load_jobs(path: str) -> JobBatch:
    z = np.load(path)
    sc = Scoring(z["mat"].astype(np.int8), int(z["q"]), int(z["e"]), int(z["q2"]), int(z["e2"]))
    return JobBatch(sc, z["qseq"], z["qoff"], z["tseq"], z["toff"], z["kernel"], z["w"], z["zdrop"],
                    z["end_bonus"], z["flag"])


def subset(b: JobBatch, idx: np.ndarray) -> JobBatch:
    qs = [b.qseq[b.qoff[i]:b.qoff[i + 1]] for i in idx]
    ts = [b.tseq[b.toff[i]:b.toff[i + 1]] for i in idx]
    out = _batch(qs, ts, b.w[idx], b.zdrop[idx], b.end_bonus[idx], b.flag[idx], b.scoring)
    out.kernel = b.kernel[idx].copy()
    return out


def cpu_ticks() -> list[int] | None:
    """The first line of /proc/stat (user nice system idle iowait irq softirq steal ...), or None."""
    try:
        with open("/proc/stat") as f:
            return [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None


def host_cpu(t0: list[int] | None, t1: list[int] | None) -> str:
    """The CPU reference's machine: model, CPUs this process may use, and between the tick counts t0 and t1
    (around the timed CPU runs) the share of CPU time that the hypervisor gave to others (steal) and the
    busy share, to tell hosts apart when the 16-core reference moves between calls. The ticks are the whole
    system's (every CPU of the machine or container), the CPU count this process's affinity."""
    model = "unknown model"
    try:
        with open("/proc/cpuinfo") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), model)
    except OSError:
        pass
    out = f"{model}, {len(os.sched_getaffinity(0))} CPUs"
    if t0 and t1 and len(t0) >= 8 and len(t1) >= 8:
        d = [b - a for a, b in zip(t0, t1)]
        tot = sum(d[:8]) or 1
        out += f"; over the timed runs: steal {d[7] / tot:.1%}, busy {1 - (d[3] + d[4] + d[7]) / tot:.1%}"
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", help="recorded JobBatch arrays (.npz)")
    ap.add_argument("--cells", type=float, default=2e10, help="band cells of the random job set")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="CPU threads (default: all cores)")
    ap.add_argument("--repeat", type=int, default=3, help="GPU timings (the best is reported)")
    ap.add_argument("--gpu-mem", type=float, default=None, help="GPU memory budget in bytes")
    ap.add_argument("--no-cpu", action="store_true", help="skip the CPU run and the comparison")
    ap.add_argument("--upload", choices=("locked", "staged"), default=os.environ.get("GPUEXT_BENCH_UPLOAD", "locked"),
                    help="locked: the job arrays in page-locked memory (sent without a staging copy; where the "
                         "engine exports them for the CUDA backend with $GPUEXT_PINNED_JOBS=1); staged: in "
                         "ordinary memory, as gpuext map exports them by default (default: $GPUEXT_BENCH_UPLOAD or locked)")
    a = ap.parse_args()

    import cupy

    from gpuext.backends import cpu
    from gpuext.backends.cuda import ksw_extd2, ksw_extz2

    t = time.perf_counter()
    batch = load_jobs(a.jobs) if a.jobs else random_jobs(np.random.default_rng(a.seed), a.cells)
    cells = batch.cells()
    # a job set recorded with one gap cost (-O4 -E2) holds ksw_extz2 jobs: their kernel's launcher
    kern = ksw_extz2 if batch.n and (batch.kernel == KERNEL_EXTZ2).all() else ksw_extd2
    print(f"jobs: {batch.n}, band cells: {cells.sum() / 1e9:.2f} G ({time.perf_counter() - t:.1f} s to make), "
          f"job arrays {a.upload}")
    if a.upload == "locked":   # (CudaBackend.host_alloc with $GPUEXT_PINNED_JOBS=1)
        batch = ksw_extd2.pin(batch)
    gm = None if a.gpu_mem is None else int(a.gpu_mem)
    reasons = kern.supports(batch, gpu_mem=gm)
    take = np.flatnonzero(reasons == 0)
    rej_cells = cells[reasons != 0].sum()
    print(f"rejected to CPU: {batch.n - len(take)} jobs ({(batch.n - len(take)) / batch.n:.2%}), "
          f"{rej_cells / 1e9:.3f} G cells ({rej_cells / max(cells.sum(), 1):.2%})",
          {kern.REASONS[int(r)]: int((reasons == r).sum()) for r in np.unique(reasons) if r})
    dev = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"].decode()
    gcells = cells[take].sum()
    # build + warm-up over every job, as the CPU's: CUDA loads each kernel when it is first looked up, just
    # before its first launch (a 200-job warm-up left E. coli's first timed DP about 6 ms longer), and the
    # pinned and device pools grow to the call's size
    kern.run(batch, take, gpu_mem=gm)
    best, got = None, None
    for i in range(max(1, a.repeat)):
        cupy.cuda.Device().synchronize()
        t = time.perf_counter()
        got = kern.run(batch, None if len(take) == batch.n else take, gpu_mem=gm)   # (None: every job)
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
        if os.environ.get("GPUEXT_BENCH_RUNS") == "1":   # each timed run: its time and last classes (a diagnostic)
            rs = kern.last_stats
            cl = sorted(rs.get("classes", []), key=lambda c: -c[3])[:4]
            sts = {(k, L): t0 for k, L, t0, _ in rs.get("class_starts", [])}
            print(f"  run {i + 1}: {dt * 1e3:.1f} ms, DP {rs.get('t_dp', 0) * 1e3:.1f} ms; last classes (start, end ms): "
                  + "; ".join(f"({c[0]}, {c[1]}: {sts.get((c[0], c[1]), float('nan')):.2f}, {c[3]:.1f})" for c in cl))
    st = kern.last_stats
    print(f"GPU ({dev}): {best:.3f} s, {gcells / best / 1e9:.1f} G cells/s "
          f"(chunks {st.get('chunks')}, transfers and backtrack included"
          + (f"; DP kernels alone {st['t_dp']:.3f} s = {gcells / max(st['t_dp'], 1e-9) / 1e9:.1f} G cells/s)"
             if "t_dp" in st else ")"))
    print("  split (last run): " + ", ".join(f"{k} {st[k] * 1e3:.1f} ms" for k in
                                            ("t_setup", "t_plan", "t_upload", "t_h2d_wait", "t_prep", "t_chunk_plan", "t_wait",
                                             "t_dp", "t_pack", "t_rb_res", "t_rb_cig", "t_post", "t_total") if k in st)
          + f", {st.get('cigar_words', 0) / 1e6:.1f} M CIGAR words"
          + "  [t_setup: the host's set-up before the uploads; t_plan: device planning incl. its read-back; t_upload: the sequences' DMAs (beside the "
            "planning); t_h2d_wait: then waiting for the sequence "
            "staging; t_dp: uploads done to the last DP kernel's end, backtracks included; t_pack, t_rb_res, t_rb_cig: after it, the CIGAR packing, the result read-back, the CIGARs' read-back]")
    if "trace" in st:   # $GPUEXT_KSW_TRACE=1: the run's marks, host / device ms from the first
        print("  trace (last run, host / device ms): " + "; ".join(f"{n} {h:.2f}/{g:.2f}" for n, h, g in st["trace"]))
        print("  trace, launches reached (class, ring lg, device ms from the uploads, host ms from the setup mark): "
              + "; ".join(f"({k}, {L}, {t:.2f}, {h:.2f})" for k, L, t, h in st.get("class_starts", [])))
    serial = os.environ.get("GPUEXT_KSW_SERIAL") == "1"
    cl = sorted(st.get("classes", []), key=lambda c: -c[3])
    print(f"  launch classes, last to end first (warps, ring lg, jobs, {'alone' if serial else 'end'} ms, DP and "
          "backtrack): " + "; ".join(f"({c[0]}, {c[1]}, {c[2]}, {c[3]:.1f})" for c in cl))
    if a.no_cpu:
        return 0
    sub = subset(batch, take) if len(take) < batch.n else batch
    cts = []
    cpu.run(sub, n_threads=a.threads)   # warm-up (untimed, as the GPU's)
    ticks0 = cpu_ticks()
    for _ in range(max(1, a.repeat)):   # the best of as many runs as the GPU gets (the CPU time varies)
        t = time.perf_counter()
        ref = cpu.run(sub, n_threads=a.threads)
        cts.append(time.perf_counter() - t)
    ct = min(cts)
    ticks1 = cpu_ticks()
    print(f"CPU (stock ksw2, {a.threads} threads): {ct:.3f} s, {gcells / ct / 1e9:.2f} G cells/s "
          f"(best of {len(cts)}: {', '.join(f'{x:.3f}' for x in cts)} s)")
    print(f"  host CPU: {host_cpu(ticks0, ticks1)}")
    print(f"speedup GPU/CPU: {ct / best:.1f}x")
    d = ref.diff(got)
    print(f"differences GPU vs CPU: {len(d)}" + (f" (first: {d[:5]})" if d else ""))
    return 1 if d else 0


if __name__ == "__main__":
    sys.exit(main())
