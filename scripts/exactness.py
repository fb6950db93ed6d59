#!/usr/bin/env python3
"""Run stock minimap2 2.31 and `gpuext map` with the same options and inputs; compare the outputs.

usage: exactness.py [--backend B] [--gpuext-opt OPT]... -- MINIMAP2_ARGS...
e.g.   exactness.py -- -ax map-ont -t2 ref.fa reads.fq

The stock CLI is built from the same sdist, unpatched (scripts/upstream.py oracle minimap2). Prints
counts of identical and different header lines and records, and the first differences; exits 0 only
when the outputs are identical (apart from gpuext's own @PG line).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import upstream  # noqa: E402

from gpuext.io.compare import compare_texts  # noqa: E402


def run_both(mm2_args: list[str], gpuext_opts: list[str] = ()) -> tuple[bytes, bytes, float, float]:
    """Return (stock output, gpuext output, stock seconds, gpuext seconds); raise on a failed run."""
    oracle = upstream.build_oracle("minimap2")
    t0 = time.perf_counter()
    a = subprocess.run([str(oracle), *mm2_args], capture_output=True)
    t1 = time.perf_counter()
    b = subprocess.run([sys.executable, "-m", "gpuext", "map", *gpuext_opts, *mm2_args], capture_output=True)
    t2 = time.perf_counter()
    if a.returncode != 0:
        raise RuntimeError(f"stock minimap2 failed ({a.returncode}): {a.stderr.decode()[-1000:]}")
    if b.returncode != 0:
        raise RuntimeError(f"gpuext map failed ({b.returncode}): {b.stderr.decode()[-1000:]}")
    return a.stdout, b.stdout, t1 - t0, t2 - t1


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--gpuext-opt", action="append", default=[], help="extra gpuext option (repeatable)")
    ap.add_argument("--show", type=int, default=5, help="differences to print [5]")
    ap.add_argument("mm2_args", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    mm2 = args.mm2_args[1:] if args.mm2_args[:1] == ["--"] else args.mm2_args
    if not mm2:
        ap.error("give minimap2's arguments after --")
    a, b, ta, tb = run_both(mm2, ["--backend", args.backend, *args.gpuext_opt])
    rep = compare_texts(a, b, args.show)
    print(f"stock {ta:.2f} s, gpuext {tb:.2f} s; {rep.summary()}")
    return 0 if rep.identical else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
