"""The 16-bit bound of the two-jobs-per-lane full-band kernels (ksw_extd2_dp_fb<K>x2, fbh<K>x2), without a
GPU: for jobs of qlen + tlen = _fb16_len (the largest the launcher sends there), the clean DP those kernels
compute (docs/kernels/ksw_extd2.md, full-band kernels: E, F, E2, F2 and the clamped H, ksw2's boundary)
is run in int64 on the extreme shapes (all matches, all mismatches, one column, one row, up to 512
query columns), and every value the kernel holds in a halfword must fit one: 8 H, the tagged gap states, the
diagonal candidate with its score, 8 H + (g - 8q - 8e) and its difference to the next state. A bound
that let any of them wrap would make the kernel differ from ksw2 on such a job."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tests.kernel.test_ksw_extd2 import PRESETS, score_matrix


def _boundary(n: np.ndarray, q: int, e: int, q2: int, e2: int) -> np.ndarray:
    """H(-1, n) = H(n, -1) as ksw_extd2's boundary_h computes it (ksw2_extd2_sse.c: the first row and
    column of differences summed)."""
    lt = math.trunc((q2 - q) / (e - e2)) - 1 if e != e2 else 0
    if q2 + e2 + lt * e2 > q + e + lt * e:
        lt += 1
    ld = lt * (e - e2) - (q2 - q) - e2
    n1 = np.clip(np.minimum(lt - 1, n), 0, None)
    neq = ((lt >= 1) & (lt <= n)).astype(np.int64)
    return -(q + e) - e * n1 + neq * ld - e2 * (n - n1 - neq)


def clean_dp_rows(t: np.ndarray, qs: np.ndarray, mat: np.ndarray, q: int, e: int, q2: int, e2: int):
    """The clean DP of the full-band kernels (H clamped, E, F, E2, F2, ksw2's boundary) of target t against
    query qs, row by row in int64: (hdiag, H, E, F, E2, F2, En, E2n, s) of row i, hdiag[j] = H(i-1, j-1), E
    and E2 of row i as its cells read them, En and E2n the next row's, s the row's scores (also
    scripts/check_fbr_bound.py)."""
    mch = int(mat[0])
    ql = len(qs)
    hup = _boundary(np.arange(ql), q, e, q2, e2)   # H(i-1, j), row -1
    E, E2 = hup - (q + e), hup - (q2 + e2)
    for i in range(len(t)):
        hl = int(_boundary(np.array([i]), q, e, q2, e2)[0])   # H(i, -1)
        hdiag = np.r_[_boundary(np.array([i - 1]), q, e, q2, e2) if i else [0], hup[:-1]]   # H(i-1, j-1)
        s = mat[int(t[i]) * 5 + qs].astype(np.int64)
        H, F, F2 = (np.empty(ql, np.int64) for _ in range(3))
        f, f2, h = hl - (q + e), hl - (q2 + e2), hl
        for j in range(ql):   # F chains along the row
            if j:
                f, f2 = max(h - q, f) - e, max(h - q2, f2) - e2
            F[j], F2[j] = f, f2
            h = min(max(hdiag[j] + s[j], E[j], f, E2[j], f2), hdiag[j] + mch)
            H[j] = h
        En, E2n = np.maximum(H - q, E) - e, np.maximum(H - q2, E2) - e2
        yield hdiag, H, E, F, E2, F2, En, E2n, s
        hup, E, E2 = H, En, E2n


def _halfword_values(t: np.ndarray, qs: np.ndarray, mat: np.ndarray, q: int, e: int, q2: int, e2: int):
    """The smallest and largest value of every quantity dp_fb2 keeps in a halfword over the whole DP of
    target t against query qs (row by row, in int64)."""
    mch = int(mat[0])
    lo, hi = 0, 0
    ce = (3 - 8 * q - 8 * e, 2 - 8 * q - 8 * e, 1 - 8 * q2 - 8 * e2, -8 * q2 - 8 * e2)   # E F E2 F2
    for hdiag, H, E, F, E2, F2, En, E2n, s in clean_dp_rows(t, qs, mat, q, e, q2, e2):
        Fn = np.r_[F[1:], max(int(H[-1]) - q, int(F[-1])) - e]
        F2n = np.r_[F2[1:], max(int(H[-1]) - q2, int(F2[-1])) - e2]
        vals = [8 * H, 8 * E + 3, 8 * F + 2, 8 * E2 + 1, 8 * F2, 8 * hdiag + 8 * s + 4, 8 * hdiag + 8 * mch + 7]
        for x, xn, c, ex in ((E, En, ce[0], e), (F, Fn, ce[1], e), (E2, E2n, ce[2], e2), (F2, F2n, ce[3], e2)):
            zx = 8 * H + c
            vals += [zx, zx - (8 * xn + (c & 7)), 8 * x - 8 * ex]
        lo = min(lo, min(int(v.min()) for v in vals))
        hi = max(hi, max(int(v.max()) for v in vals))
    return lo, hi


def full_band_scoring(preset: str):
    """(mat as int64, q, e, q2, e2) of a preset as the full-band kernels get them (the gap costs as the
    launcher swaps them); "extreme": the largest scores those kernels take, with map-ont's gaps."""
    from gpuext.backends.cuda.ksw_extd2 import _swapped_gaps
    from gpuext.engine.jobs import Scoring

    a, b, q, e, q2, e2 = (15, 16, 4, 2, 24, 1) if preset == "extreme" else PRESETS[preset][:6]
    s = Scoring(score_matrix(a, b), q, e, q2, e2)
    return (np.asarray(s.mat, np.int64).reshape(-1), *_swapped_gaps(s))


@pytest.mark.parametrize("preset", [p for p in sorted(PRESETS) if p != "asm5"] + ["extreme"])
def test_fb16_bound_keeps_every_value_in_a_halfword(preset):
    from gpuext.backends.cuda.ksw_extd2 import _fb16_len

    mat, q, e, q2, e2 = full_band_scoring(preset)
    L = _fb16_len(q, e, q2, e2, int(mat[0]))
    assert L >= 300, (preset, L)   # the bound leaves the gap fills of a long-read run their halfwords
    rng = np.random.default_rng(7)
    same = rng.integers(0, 4, L // 2)
    shapes = {
        "all matches": (same, same),
        "all mismatches": (same, (same + 1) % 4),
        "one column": (rng.integers(0, 4, L - 1), rng.integers(0, 4, 1)),
        "one row": (rng.integers(0, 4, 1), rng.integers(0, 4, min(L - 1, 512))),
        "a full pass of columns": (rng.integers(0, 4, L - min(512, L // 2)), rng.integers(0, 4, min(512, L // 2))),
    }
    for name, (t, qs) in shapes.items():
        lo, hi = _halfword_values(t, qs, mat, q, e, q2, e2)
        assert -32768 <= lo and hi <= 32767, (preset, name, L, lo, hi)
