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
        diffs = res.take(idx).diff(ref)
        if diffs:
            k, name = diffs[0]
            i = int(idx[k])
            raise VerificationError(
                f"batch {batch_no}, job {i} (qlen {int(batch.qlen()[i])}, tlen {int(batch.tlen()[i])}, "
                f"w {int(batch.w[i])}, zdrop {int(batch.zdrop[i])}, end_bonus {int(batch.end_bonus[i])}, "
                f"flag 0x{int(batch.flag[i]):x}): field '{name}' differs from the stock ksw2 code "
                f"({len(diffs)} difference(s) among {len(idx)} verified jobs)")
        return len(idx)
