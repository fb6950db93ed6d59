"""Random ksw_extend2 jobs that reach the corners of BWA's extension DP (for tests and benchmarks).

The jobs mix what bwa mem produces (query and target from one sequence with substitutions, indels
and N, h0 a seed score, w 100 or 200, Z-drop 100, end bonus 5 or 0, BWA's and the long-read
presets' scoring) with what stresses an exact port: tiny queries, empty targets, bands of 1..5
columns, large h0 with cheap insertions (a long positive row -1, so stale cells past the band are
read), low-complexity sequence (ties everywhere), junk tails (Z-drop and dead rows), Z-drop off,
asymmetric matrices and an alphabet without N. Every job is valid input for ksw_extend2 (qlen >= 1,
h0 >= 1, e_del and e_ins >= 1, codes < m).
"""
from __future__ import annotations

import numpy as np

from .dump import ExtendJobs

# (a, b, o_del, e_del, o_ins, e_ins): bwa mem defaults, -x pacbio / ont2d, -x intractg, and others
SCORINGS = ((1, 4, 6, 1, 6, 1), (1, 1, 1, 1, 1, 1), (1, 9, 16, 1, 16, 1), (2, 3, 5, 2, 3, 1),
            (3, 5, 0, 3, 1, 2), (1, 2, 2, 1, 1, 1))


def bwa_matrix(a: int, b: int, m: int = 5) -> np.ndarray:
    """bwa_fill_scmat (bwa.c:136): +a on the diagonal, -b elsewhere, -1 in the N row and column."""
    mat = np.full((m, m), -b, np.int8)
    np.fill_diagonal(mat, a)
    if m == 5:
        mat[4, :] = -1
        mat[:, 4] = -1
    return mat.reshape(-1)


def _mutate(rng, s: np.ndarray, err: float, alphabet: int) -> np.ndarray:
    out, i = [], 0
    while i < len(s):
        x = rng.random()
        if x < err * 0.6:
            out.append(int(rng.integers(0, alphabet))); i += 1
        elif x < err * 0.8:
            out.extend(rng.integers(0, alphabet, int(rng.geometric(0.4))).tolist())
        elif x < err:
            i += int(rng.geometric(0.4))
        else:
            out.append(int(s[i])); i += 1
    return np.asarray(out, np.uint8)


def _sequence(rng, n: int, alphabet: int) -> np.ndarray:
    if rng.random() < 0.15:  # low complexity
        unit = rng.integers(0, min(alphabet, 4), int(rng.integers(1, 5)))
        return np.resize(unit, n).astype(np.uint8)
    return rng.integers(0, min(alphabet, 4), n).astype(np.uint8)


def random_jobs(rng: np.random.Generator, n: int, max_qlen: int = 3000) -> ExtendJobs:
    """n random jobs; lengths mostly short-read sized, some up to max_qlen."""
    mats: list[np.ndarray] = []
    mat_key: dict[bytes, int] = {}
    qs, ts, cols = [], [], {k: [] for k in ("h0", "w", "end_bonus", "zdrop", "o_del", "e_del", "o_ins", "e_ins", "mat_id")}
    for _ in range(n):
        a, b, od, ed, oi, ei = SCORINGS[int(rng.integers(0, len(SCORINGS)))]
        m = 5 if rng.random() < 0.9 else 4
        mat = bwa_matrix(a, b, m)
        if rng.random() < 0.1:  # an asymmetric matrix
            mat = rng.integers(-6, 4, m * m).astype(np.int8)
            mat[0] = max(int(mat[0]), 1)
        key = mat.tobytes()
        if key not in mat_key:
            mat_key[key] = len(mats)
            mats.append(mat)
        r = rng.random()
        qlen = int(rng.integers(1, 12)) if r < 0.1 else int(rng.integers(12, 260)) if r < 0.85 \
            else int(rng.integers(260, max(261, max_qlen)))
        ref = _sequence(rng, qlen + int(rng.integers(0, 2 * qlen + 20)), m)
        if rng.random() < 0.05:
            ref[rng.random(len(ref)) < 0.05] = m - 1
        q = _mutate(rng, ref[:qlen], float(rng.choice([0.0, 0.02, 0.1, 0.3])), m)[:qlen]
        if len(q) == 0:
            q = ref[:1].copy()
        if rng.random() < 0.2:  # a junk tail on the query
            cut = int(rng.integers(0, len(q)))
            q[cut:] = rng.integers(0, m, len(q) - cut)
        t = ref.copy()
        r = rng.random()
        if r < 0.03:
            t = t[:0]
        elif r < 0.15:
            t = t[:int(rng.integers(1, max(2, len(q))))]
        elif r < 0.25:
            t = rng.integers(0, m, len(t)).astype(np.uint8)
        r = rng.random()
        h0 = int(rng.integers(1, 40)) if r < 0.4 else int(rng.integers(40, 400)) if r < 0.9 \
            else int(rng.integers(400, 5000))
        r = rng.random()
        w = int(rng.integers(1, 6)) if r < 0.2 else int(rng.choice([100, 200])) if r < 0.7 \
            else int(rng.integers(6, 300))
        zd = int(rng.choice([100, 100, 0, -1, 5, 30, 400]))
        eb = int(rng.choice([5, 0, 0, 1, 20]))
        if rng.random() < 0.15:  # cheap insertions: a long positive row -1 and stale cells
            oi, ei = 0, 1
        qs.append(q), ts.append(t)
        for k, v in zip(cols, (h0, w, eb, zd, od, ed, oi, ei, mat_key[key])):
            cols[k].append(v)
    qoff = np.zeros(n + 1, np.int64)
    qoff[1:] = np.cumsum([len(x) for x in qs])
    toff = np.zeros(n + 1, np.int64)
    toff[1:] = np.cumsum([len(x) for x in ts])
    return ExtendJobs(qseq=np.concatenate(qs) if qs else np.zeros(0, np.uint8), qoff=qoff,
                      tseq=np.concatenate(ts) if ts else np.zeros(0, np.uint8), toff=toff, mats=mats,
                      **{k: np.asarray(v, np.int32) for k, v in cols.items()})
