#!/usr/bin/env python3
"""How far the full-band DP's values stray from a nearby H: the premise of a pass pipeline in 16-bit halves with a
relative base (docs/kernels/ksw_extd2.md, "Next", item 2). No GPU, no kernel: the clean DP that the full-band kernels
compute (H clamped, E, F, E2, F2, ksw2's boundary) runs in int64 on extreme and random shapes per preset, and for
each value X a lane holds at row i in column j, it reports the largest |8 (X - B) + tag| over the whole DP, with the
base B = H(i - 1, j0 - 1), the cell diagonal to the block's first column j0: blocks of K columns (a lane's; its base
arrives with the diagonal input) or of 32 K (a pass's). A halfword holds the block's values when that is below 32,768.
Also printed: the largest |H(i, j) - H(i, j - 1)| and |H(i, j) - H(i - 1, j)|.

    python3 scripts/check_fbr_bound.py [--presets map-ont,sr] [--len 600]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tests.kernel.test_fb16_bound import clean_dp_rows, full_band_scoring  # noqa: E402  (the clean DP; the scorings)


def spread(t, qs, mat, q, e, q2, e2, widths):
    """The largest |8 (X - B) + 7| per block width, and the largest steps of H along a row and a column."""
    mch = int(mat[0])
    j = np.arange(len(qs))
    out = {w: 0 for w in widths}
    srow = scol = 0
    hprev = None
    for hdiag, H, E, F, E2, F2, En, E2n, s in clean_dp_rows(t, qs, mat, q, e, q2, e2):
        xs = np.stack([H, E, F, E2, F2, En, E2n, hdiag + s, hdiag + mch, H - q, H - q2])
        for w in widths:
            base = hdiag[(j // w) * w]
            out[w] = max(out[w], int(np.abs(8 * (xs - base)).max()) + 7)
        srow = max(srow, int(np.abs(np.diff(H)).max()) if len(H) > 1 else 0)
        if hprev is not None:
            scol = max(scol, int(np.abs(H - hprev).max()))
        hprev = H
    return out, srow, scol


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--presets", default="map-ont,map-hifi,sr,extreme")
    ap.add_argument("--len", type=int, default=400, help="the shapes' size (the spread does not grow with it)")
    a = ap.parse_args()
    widths = (4, 6, 8, 16, 128, 192, 256)
    rng = np.random.default_rng(11)
    L = a.len
    same = rng.integers(0, 4, L)
    mut = same.copy()
    mut[L // 4:L // 4 + L // 8] = rng.integers(0, 4, L // 8)   # a junk block
    mut = np.r_[mut[:L // 2], mut[L // 2 + L // 10:]]           # a long deletion
    shapes = {
        "all matches": (same, same),
        "all mismatches": (same, (same + 1) % 4),
        "unrelated": (rng.integers(0, 4, L), rng.integers(0, 4, L)),
        "query 5x the target": (rng.integers(0, 4, L // 5), rng.integers(0, 4, L)),
        "target 5x the query": (rng.integers(0, 4, L), rng.integers(0, 4, L // 5)),
        "similar, a junk block and a long deletion": (same, mut),
    }
    worst = 0
    for preset in a.presets.split(","):
        mat, q, e, q2, e2 = full_band_scoring(preset)
        for name, (t, qs) in shapes.items():
            out, srow, scol = spread(t, qs, mat, q, e, q2, e2, widths)
            worst = max(worst, out[16])
            print(f"{preset:9s} {name:42s} steps: row {srow:3d} column {scol:3d}; |8 (X - B)| + 7 by block width: "
                  + ", ".join(f"{w}: {v}" for w, v in out.items()))
    print(f"largest for blocks of up to 16 columns: {worst} ({'fits' if worst < 32768 else 'does not fit'} a halfword)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
