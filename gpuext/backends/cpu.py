"""The cpu backend: minimap2's stock ksw2 code (ksw_extd2_sse / ksw_extz2_sse) over a JobBatch.

It is the reference every other backend is verified against and the fallback for every job another
backend does not take. Runs on n threads inside the native module with the GIL released.
Neighbours: gpuext/engine/jobs.py (the arrays), gpuext/_native (the stock C code).
"""
from __future__ import annotations

import numpy as np

from ..engine.jobs import JobBatch, ResultBatch


def run(batch: JobBatch, n_threads: int = 1) -> ResultBatch:
    """Compute every job of the batch with the stock ksw2 code."""
    from .._native import minimap2 as native

    s = batch.scoring
    c = np.ascontiguousarray
    out = native.ksw_batch(c(batch.qseq, np.uint8), c(batch.qoff, np.int64), c(batch.tseq, np.uint8),
                           c(batch.toff, np.int64), c(batch.kernel, np.int8), c(batch.w, np.int32),
                           c(batch.zdrop, np.int32), c(batch.end_bonus, np.int32), c(batch.flag, np.int32),
                           c(s.mat, np.int8), int(s.q), int(s.e), int(s.q2), int(s.e2), int(n_threads))
    return ResultBatch(**out)
