#!/usr/bin/env python3
"""Time gpuext's ksw_extd2 launcher (`ksw_extd2.run`) on recorded jobs: the job arrays in page-locked memory
(as gpuext map's engine and bench_ksw_extd2.py hand them over), two untimed calls, then --runs timed calls;
prints one line: min, median and mean ms, and the medians of the middle team's and the pass pipeline's end
(ms after the uploads); --classes adds every launch class's end, --check a comparison with the stock code. No CPU
reference in the timing: for A/B timing of launcher versions in separate processes of one
device call (device_check.sh abrev), where bench_ksw_extd2.py's 3-decimal seconds are too coarse.

    python3 scripts/time_extd2.py jobs.npz --runs 40 --tag B1
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("jobs", help="recorded JobBatch arrays (.npz, gpuext map --dump-jobs)")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--tag", default="", help="a label printed first")
    ap.add_argument("--classes", action="store_true", help="print the last run's launch classes, by their end")
    ap.add_argument("--check", action="store_true", help="compare the last run with the stock code (cpu backend)")
    ap.add_argument("--long-extensions", type=int, metavar="N",
                    help="only the exact extensions (EXTZ_ONLY, not APPROX_MAX) of qlen + tlen >= N: the middle team's "
                         "long jobs, alone")
    a = ap.parse_args()

    import cupy

    from bench_ksw_extd2 import load_jobs
    from gpuext.backends.cuda import ksw_extd2

    from gpuext.engine.jobs import KSW_EZ_APPROX_MAX, KSW_EZ_EXTZ_ONLY

    batch = load_jobs(a.jobs)
    if a.long_extensions is not None:
        keep = ((batch.flag & KSW_EZ_EXTZ_ONLY) != 0) & ((batch.flag & KSW_EZ_APPROX_MAX) == 0)
        keep &= batch.qlen() + batch.tlen() >= a.long_extensions
        batch = batch.subset(np.flatnonzero(keep))
        print(f"{batch.n} exact extensions of qlen + tlen >= {a.long_extensions}, {int(batch.cells().sum())} cells",
              file=sys.stderr)
    batch = ksw_extd2.pin(batch)
    ksw_extd2.run(batch)
    ksw_extd2.run(batch)
    ms, team, pipe = [], [], []
    for _ in range(max(1, a.runs)):
        cupy.cuda.Device().synchronize()
        t = time.perf_counter()
        got = ksw_extd2.run(batch)
        ms.append((time.perf_counter() - t) * 1e3)
        ends = {(str(c[0]), c[1]): c[3] for c in ksw_extd2.last_stats.get("classes", [])}
        team.append(max([v for (k, _), v in ends.items() if k == "8"] or [np.nan]))
        pipe.append(max([v for (k, _), v in ends.items() if k in ("fbp", "fbx")] or [np.nan]))
    ms = np.array(ms)

    def med(x) -> str:   # (a class the call did not have: "-")
        x = np.array(x)
        return f"{np.median(x[~np.isnan(x)]):.2f}" if (~np.isnan(x)).any() else "-"

    print(f"{a.tag}: min {ms.min():.2f} ms, median {np.median(ms):.2f}, mean {ms.mean():.2f} ({len(ms)} runs); "
          f"ends, median: middle team {med(team)}, pass pipeline {med(pipe)} ms; "
          f"upload waves {ksw_extd2.last_stats.get('waves', 1)}")
    if a.classes:
        for c in sorted(ksw_extd2.last_stats.get("classes", []), key=lambda c: c[3]):
            print(f"  class {c[0]} {c[1]}: {c[2]} jobs, ends {c[3]:.2f} ms")
    if a.check:
        from gpuext.backends import cpu
        d = cpu.run(batch, n_threads=os.cpu_count() or 1).diff(got)   # the last timed run's results
        print(f"{a.tag}: differences GPU vs CPU: {len(d)}" + (f" (first: {d[:5]})" if d else ""))
        return 1 if d else 0
    return 0


if __name__ == "__main__":
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    sys.exit(main())
