"""--verify FRACTION: recompute a random share of a backend's results with the stock code, fail on a difference.

Neighbours: gpuext/engine/rounds.py calls `Verifier.check` after every backend call;
gpuext/backends/cpu.py is the reference.
"""
from __future__ import annotations

import numpy as np

from ..backends import cpu
from .jobs import JobBatch, ResultBatch


class VerificationError(RuntimeError):
    """A backend result differs from the stock ksw2 code."""


class Verifier:
    def __init__(self, fraction: float, seed: int = 11):
        if not 0 < fraction <= 1:
            raise ValueError("--verify takes a fraction in (0, 1]")
        self.fraction = fraction
        self.rng = np.random.default_rng(seed)

    def check(self, batch: JobBatch, res: ResultBatch, batch_no: int) -> int:
        """Recompute a sample of the jobs; raise VerificationError naming the first job that differs."""
        if self.fraction >= 1:
            idx = np.arange(batch.n)
        else:
            idx = np.flatnonzero(self.rng.random(batch.n) < self.fraction)
        if len(idx) == 0:
            return 0
        ref = cpu.run(batch.subset(idx))
        got = ResultBatch.assemble(len(idx), [(np.arange(len(idx)), _rows(res, idx))])
        diffs = got.diff(ref)
        if diffs:
            k, name = diffs[0]
            i = int(idx[k])
            raise VerificationError(
                f"batch {batch_no}, job {i} (qlen {int(batch.qlen()[i])}, tlen {int(batch.tlen()[i])}, "
                f"w {int(batch.w[i])}, zdrop {int(batch.zdrop[i])}, end_bonus {int(batch.end_bonus[i])}, "
                f"flag 0x{int(batch.flag[i]):x}): field '{name}' differs from the stock ksw2 code "
                f"({len(diffs)} difference(s) among {len(idx)} verified jobs)")
        return len(idx)


def _rows(res: ResultBatch, idx: np.ndarray) -> ResultBatch:
    """The rows idx of a ResultBatch as a ResultBatch."""
    fields = {k: getattr(res, k)[idx] for k in ("max", "max_q", "max_t", "mqe", "mqe_t", "mte", "mte_q",
                                                 "score", "zdropped", "reach_end")}
    ncig = np.diff(res.coff)[idx]
    coff = np.r_[0, np.cumsum(ncig)].astype(np.int64)
    cigar = np.concatenate([res.cigar_of(int(i)) for i in idx]) if len(idx) else np.zeros(0, np.uint32)
    return ResultBatch(coff=coff, cigar=cigar.astype(np.uint32), **fields)
