"""The batch contract between the engine and every backend: extension jobs and results as flat arrays.

Neighbours: the native module (gpuext/_native) records jobs into a JobBatch and reads results back
from a ResultBatch; backends (gpuext/backends/cpu.py, gpuext/backends/cuda/) turn one into the other.
Nothing here imports CuPy. docs/architecture.md describes the same format in prose.

A job is one call of minimap2's ksw2 (`ksw_extd2_sse` or `ksw_extz2_sse`) with exactly the arguments
minimap2 passes. Bases are minimap2's codes 0..4 (A, C, G, T, N). The
result of a job is every field of `ksw_extz_t` plus its CIGAR, packed as in ksw2 (`len << 4 | op`,
op 0=M 1=I 2=D 3=N).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# ksw2 flag bits (ksw2.h)
KSW_EZ_SCORE_ONLY = 0x01
KSW_EZ_RIGHT = 0x02
KSW_EZ_GENERIC_SC = 0x04
KSW_EZ_APPROX_MAX = 0x08
KSW_EZ_APPROX_DROP = 0x10
KSW_EZ_EXTZ_ONLY = 0x40
KSW_EZ_REV_CIGAR = 0x80
KSW_EZ_SPLICE_FOR = 0x100
KSW_EZ_SPLICE_REV = 0x200
KSW_EZ_SPLICE_FLANK = 0x400
KSW_EZ_SPLICE_CMPLX = 0x800
KSW_NEG_INF = -0x40000000

# which ksw2 kernel a job needs (the same rule as minimap2's mm_align_pair)
KERNEL_EXTD2 = 0   # dual affine gap cost: ksw_extd2_sse
KERNEL_EXTZ2 = 1   # single affine gap cost: ksw_extz2_sse
# Splice jobs (ksw_exts2_sse) are never batched: the engine runs them inline with the stock code.


@dataclass
class Scoring:
    """The scoring shared by every job of a batch (minimap2's mm_mapopt_t fields)."""

    mat: np.ndarray          # int8[25], row = target base, column = query base
    q: int
    e: int
    q2: int
    e2: int


@dataclass
class JobBatch:
    """Extension jobs as flat arrays. Job i has query qseq[qoff[i]:qoff[i+1]] and target
    tseq[toff[i]:toff[i+1]]; every per-job array has length n."""

    scoring: Scoring
    qseq: np.ndarray         # uint8, all queries concatenated
    qoff: np.ndarray         # int64[n+1]
    tseq: np.ndarray         # uint8, all targets concatenated
    toff: np.ndarray         # int64[n+1]
    kernel: np.ndarray       # int8[n]: KERNEL_*
    w: np.ndarray            # int32[n]: band half-width (negative: no band)
    zdrop: np.ndarray        # int32[n]: Z-drop (negative: off)
    end_bonus: np.ndarray    # int32[n]
    flag: np.ndarray         # int32[n]: KSW_EZ_* bits, GENERIC_SC included when minimap2 sets it

    @property
    def n(self) -> int:
        return len(self.w)

    def qlen(self) -> np.ndarray:
        return np.diff(self.qoff).astype(np.int32)

    def tlen(self) -> np.ndarray:
        return np.diff(self.toff).astype(np.int32)

    def cells(self) -> np.ndarray:
        """DP cells ksw2 computes per job: the band area (int64)."""
        return band_cells(self.qlen(), self.tlen(), self.w)

    @staticmethod
    def of(scoring: Scoring, qs, ts, kernel, w, zdrop, end_bonus, flag) -> "JobBatch":
        """A batch of the pairs (qs[i], ts[i]) of base arrays; kernel, w, zdrop, end_bonus and flag each one
        value for every job or one per job."""
        n = len(qs)
        off = lambda parts: np.r_[0, np.cumsum([len(x) for x in parts])].astype(np.int64)  # noqa: E731
        cat = lambda parts: np.concatenate(parts).astype(np.uint8) if n else np.zeros(0, np.uint8)  # noqa: E731
        col = lambda v, dt: np.broadcast_to(np.asarray(v, dt), (n,)).copy()  # noqa: E731
        return JobBatch(scoring, cat(qs), off(qs), cat(ts), off(ts), col(kernel, np.int8), col(w, np.int32),
                        col(zdrop, np.int32), col(end_bonus, np.int32), col(flag, np.int32))

    @staticmethod
    def concat(batches: list["JobBatch"]) -> "JobBatch":
        """One batch holding the jobs of several (same scoring) in order."""
        def offsets(offs):
            out, base = [np.zeros(1, np.int64)], 0
            for o in offs:
                out.append(o[1:] + base)
                base += int(o[-1])
            return np.concatenate(out)
        cat = lambda name: np.concatenate([getattr(b, name) for b in batches])  # noqa: E731
        return JobBatch(batches[0].scoring, cat("qseq"), offsets([b.qoff for b in batches]), cat("tseq"),
                        offsets([b.toff for b in batches]), cat("kernel"), cat("w"), cat("zdrop"),
                        cat("end_bonus"), cat("flag"))

    def save(self, path: str) -> None:
        """Write the batch as .npz (the arrays above plus mat, q, e, q2, e2), e.g. for benchmarks."""
        s = self.scoring
        np.savez_compressed(path, qseq=self.qseq, qoff=self.qoff, tseq=self.tseq, toff=self.toff,
                            kernel=self.kernel, w=self.w, zdrop=self.zdrop, end_bonus=self.end_bonus,
                            flag=self.flag, mat=s.mat, q=s.q, e=s.e, q2=s.q2, e2=s.e2)

    def subset(self, idx: np.ndarray) -> "JobBatch":
        """The jobs idx (in that order) as a batch of their own."""
        idx = np.asarray(idx, np.int64)
        qseq, qoff = take_ragged(self.qseq, self.qoff, idx)
        tseq, toff = take_ragged(self.tseq, self.toff, idx)
        return JobBatch(self.scoring, qseq, qoff, tseq, toff, self.kernel[idx], self.w[idx],
                        self.zdrop[idx], self.end_bonus[idx], self.flag[idx])


def take_ragged(values: np.ndarray, off: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows idx of a ragged array (row i is values[off[i]:off[i+1]]), concatenated, and their offsets."""
    lens = np.diff(off)[idx]
    new_off = np.r_[0, np.cumsum(lens)].astype(np.int64)
    src = np.repeat(off[:-1][idx] - new_off[:-1], lens) + np.arange(int(new_off[-1]))
    return values[src], new_off


RESULT_FIELDS = ("max", "max_q", "max_t", "mqe", "mqe_t", "mte", "mte_q", "score", "zdropped", "reach_end")


@dataclass
class ResultBatch:
    """Every field of ksw_extz_t per job, and the CIGARs concatenated (cigar[coff[i]:coff[i+1]])."""

    max: np.ndarray          # int32[n]
    max_q: np.ndarray        # int32[n]
    max_t: np.ndarray        # int32[n]
    mqe: np.ndarray          # int32[n]
    mqe_t: np.ndarray        # int32[n]
    mte: np.ndarray          # int32[n]
    mte_q: np.ndarray        # int32[n]
    score: np.ndarray        # int32[n]
    zdropped: np.ndarray     # int8[n]
    reach_end: np.ndarray    # int8[n]
    coff: np.ndarray         # int64[n+1]
    cigar: np.ndarray        # uint32, len << 4 | op
    fields: tuple = field(default=RESULT_FIELDS, repr=False)

    @property
    def n(self) -> int:
        return len(self.max)

    def cigar_of(self, i: int) -> np.ndarray:
        return self.cigar[self.coff[i]:self.coff[i + 1]]

    @staticmethod
    def assemble(n: int, parts: list[tuple[np.ndarray, "ResultBatch"]]) -> "ResultBatch":
        """One ResultBatch of n jobs from parts (idx, result): row k of a part is job idx[k]."""
        cols = {name: np.zeros(n, np.int8 if name in ("zdropped", "reach_end") else np.int32) for name in RESULT_FIELDS}
        ncig = np.zeros(n, np.int64)
        for idx, r in parts:
            for name in RESULT_FIELDS:
                cols[name][idx] = getattr(r, name)
            ncig[idx] = np.diff(r.coff)
        coff = np.r_[0, np.cumsum(ncig)].astype(np.int64)
        cigar = np.zeros(int(coff[-1]), np.uint32)
        for idx, r in parts:   # element p of job k moves by coff[idx[k]] - r.coff[k]
            m = int(r.coff[-1])
            shift = np.repeat(coff[np.asarray(idx, np.int64)] - r.coff[:-1], np.diff(r.coff))
            cigar[np.arange(m) + shift] = r.cigar[:m]
        return ResultBatch(coff=coff, cigar=cigar, **cols)

    def take(self, idx: np.ndarray) -> "ResultBatch":
        """The rows idx of this ResultBatch, in that order."""
        idx = np.asarray(idx, np.int64)
        cigar, coff = take_ragged(self.cigar, self.coff, idx)
        return ResultBatch(coff=coff, cigar=cigar.astype(np.uint32),
                           **{name: getattr(self, name)[idx] for name in RESULT_FIELDS})

    def diff(self, other: "ResultBatch") -> list[tuple[int, str]]:
        """(job, field) pairs where two results differ; empty when identical."""
        out = []
        for name in self.fields:
            a, b = getattr(self, name), getattr(other, name)
            for i in np.flatnonzero(a != b):
                out.append((int(i), name))
        la, lb = np.diff(self.coff), np.diff(other.coff)
        bad = la != lb
        job = np.repeat(np.arange(self.n), la)              # the job of each CIGAR element of self
        same = ~bad[job]
        pos_b = np.repeat(other.coff[:-1] - self.coff[:-1], la) + np.arange(int(self.coff[-1]))
        neq = self.cigar[:int(self.coff[-1])][same] != other.cigar[pos_b[same]]
        bad[job[same][neq]] = True
        out.extend((int(i), "cigar") for i in np.flatnonzero(bad))
        return sorted(set(out))


def band_cells(qlen: np.ndarray, tlen: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Cells inside ksw2's band |i - j| <= w on a qlen x tlen matrix (w < 0: whole matrix)."""
    q = qlen.astype(np.int64)
    t = tlen.astype(np.int64)
    w = w.astype(np.int64)
    full = q * t
    w = np.where(w < 0, np.maximum(q, t), w)
    # cells with j - i > w (above the band) and i - j > w (below it), counted in closed form
    def outside(a, b):  # cells with (col - row) > w in an a-row x b-column matrix
        k = np.clip(b - w - 1, 0, None)          # columns offsets that can be out of band
        rows = np.minimum(a, k)
        return rows * k - rows * (rows - 1) // 2
    return full - outside(t, q) - outside(q, t)
