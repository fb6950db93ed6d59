#!/usr/bin/env python3
"""Checks, on the stock ksw2 code, the identity a books-free middle team would rest on: in ksw_extd2's exact mode,
on every anti-diagonal r and for every pair of slots st0 <= t < en0,

    H[t + 1] - H[t] == (int8) u[t + 1] - (int8) v[t]

(H: ksw2's int32 score array after its update of r, lines 326-357 of ksw2_extd2_sse.c; u, v: its int8 difference
arrays of r). If it holds, an anti-diagonal's H is a suffix sum of that anti-diagonal's bytes from one anchor,
H[en0] = old H[en0 - 1] + u[en0], and no per-slot H has to be kept from one anti-diagonal to the next
(docs/kernels/ksw_extd2.md, "Next").

The check is compiled into a copy of upstream's ksw2_extd2_sse.c from build/upstream (scripts/upstream.py unpacks
the verified sdist; nothing of it is committed), in a temporary folder, and run on the exact jobs (not APPROX_MAX)
of a recorded job set (--jobs, gpuext map --dump-jobs) and of tests/kernel's random generator (every preset, also
GENERIC_SC and extreme gap costs). Prints one line per set and exits 1 on any violation.

    python3 scripts/check_h_identity.py [--jobs e_coli.npz] [--random 300]
"""
from __future__ import annotations

import argparse
import ctypes
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

# inserted after ksw2's H update of anti-diagonal r (the r == 0 special case is its last line)
ANCHOR = "\t\t\t} else H[0] = v8[0] - qe, max_H = H[0], max_t = 0; // special casing r==0\n"
CHECK = ("\t\t\tfor (int t2 = st0; t2 < en0; ++t2) {\n"
         "\t\t\t\t++gx_pairs;\n"
         "\t\t\t\tif (H[t2 + 1] - H[t2] != (int32_t)u8[t2 + 1] - (int32_t)v8[t2]) ++gx_viol;\n"
         "\t\t\t}\n")
DRIVER = r"""
#include <stdlib.h>
#include <string.h>
#include "ksw2.h"
long gx_pairs, gx_viol;
void gx_run(int qlen, const uint8_t *q, int tlen, const uint8_t *t, const int8_t *mat, int gq, int ge, int gq2, int ge2,
            int w, int zd, int eb, int flag, long *out)
{
	ksw_extz_t ez;
	memset(&ez, 0, sizeof(ez));
	gx_pairs = gx_viol = 0;
	ksw_extd2_sse(0, qlen, q, tlen, t, 5, mat, gq, ge, gq2, ge2, w, zd, eb, flag, &ez);
	free(ez.cigar);
	out[0] = gx_pairs, out[1] = gx_viol;
}
"""


def build(tmp: Path) -> ctypes.CDLL:
    import upstream

    src = upstream.unpack("minimap2")
    code = (src / "ksw2_extd2_sse.c").read_text()
    if code.count(ANCHOR) != 1:
        sys.exit("check_h_identity.py: ksw2_extd2_sse.c is not the one this check was written for")
    code = code.replace(ANCHOR, ANCHOR + CHECK).replace('#include "ksw2.h"', '#include "ksw2.h"\nextern long gx_pairs, gx_viol;', 1)
    (tmp / "ksw2_extd2_check.c").write_text(code)
    (tmp / "driver.c").write_text(DRIVER)
    lib = tmp / "libcheck.so"
    subprocess.run(["gcc", "-O2", "-msse4.1", "-fPIC", "-shared", f"-I{src}", "-o", str(lib), str(tmp / "ksw2_extd2_check.c"),
                    str(src / "kalloc.c"), str(tmp / "driver.c")], check=True)
    return ctypes.CDLL(str(lib))


def check(lib, name: str, b, gaps=None) -> int:
    """The identity over batch b's exact jobs (with gaps (q, e, q2, e2) instead of its scoring's); its violations."""
    from gpuext.engine.jobs import KSW_EZ_APPROX_MAX

    s = b.scoring
    q, e, q2, e2 = gaps or (s.q, s.e, s.q2, s.e2)
    mat = np.ascontiguousarray(s.mat, np.int8)
    out = np.zeros(2, np.int64)
    P = ctypes.c_void_p
    jobs = pairs = viol = bad = 0
    for j in range(b.n):
        if b.flag[j] & KSW_EZ_APPROX_MAX:   # no H array
            continue
        qs = np.ascontiguousarray(b.qseq[b.qoff[j]:b.qoff[j + 1]], np.uint8)
        ts = np.ascontiguousarray(b.tseq[b.toff[j]:b.toff[j + 1]], np.uint8)
        if len(qs) == 0 or len(ts) == 0:
            continue
        lib.gx_run(len(qs), qs.ctypes.data_as(P), len(ts), ts.ctypes.data_as(P), mat.ctypes.data_as(P), int(q), int(e),
                   int(q2), int(e2), int(b.w[j]), int(b.zdrop[j]), int(b.end_bonus[j]), int(b.flag[j]), out.ctypes.data_as(P))
        jobs, pairs, viol, bad = jobs + 1, pairs + int(out[0]), viol + int(out[1]), bad + (out[1] > 0)
    print(f"{name}: {jobs} exact jobs, {pairs} slot pairs, {viol} violations in {bad} jobs")
    return viol


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", action="append", default=[], help="a recorded job set (.npz, gpuext map --dump-jobs)")
    ap.add_argument("--random", type=int, default=300, help="random jobs per preset and seed (0: none)")
    a = ap.parse_args()
    from bench_ksw_extd2 import load_jobs
    from tests.kernel.test_ksw_extd2 import PRESETS, random_jobs

    viol = 0
    with tempfile.TemporaryDirectory() as tmp:
        lib = build(Path(tmp))
        for path in a.jobs:
            viol += check(lib, path, load_jobs(path))
        if a.random:
            for preset in PRESETS:
                for seed in range(3):
                    b = random_jobs(np.random.default_rng([seed, 99]), preset, a.random, max_len=3000)
                    viol += check(lib, f"{preset} seed {seed}", b)
                b = random_jobs(np.random.default_rng([5, 7]), preset, a.random, max_len=3000, transition=2)
                viol += check(lib, f"{preset} GENERIC_SC", b)
            for gaps in ((95, 7, 100, 3), (12, 4, 60, 2), (40, 10, 41, 9)):
                b = random_jobs(np.random.default_rng(list(gaps)), "asm5", a.random, max_len=3000)
                viol += check(lib, f"asm5 scores, gaps {gaps}", b, gaps)
    return 1 if viol else 0


if __name__ == "__main__":
    sys.exit(main())
