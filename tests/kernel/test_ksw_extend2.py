"""CUDA ksw_extend2 vs BWA's own ksw_extend2 (gpuext._native.bwa): every output of every job.

Jobs: the seed dumps of tests/bwa (real Illumina celegans and na18507, simulated Illumina pairs,
-x pacbio and -x ont2d; made by the patched bwa, whose SAM the tests/bwa oracle checks) and fresh
fuzzed jobs from gpuext.bwa.fuzz (the seed is printed on failure) on every kernel: the automatic
choice (ring kernels of 8, 16 or 32 lanes per job, the thread kernel for the rest), the thread
kernel alone and the whole-warp ring kernels alone; chunked uploads through either host path. DP cells must equal the
CPU count too. CuPy is imported only inside the tests.
"""
from __future__ import annotations

import time

import numpy as np
import pytest

from gpuext.bwa.dump import read_dump
from gpuext.bwa.fuzz import random_jobs

from tests.bwa.dumps import CASES, REAL, bwa_dumps

pytestmark = pytest.mark.gpu


def _check(jobs, want, mode, what):
    from gpuext._native import bwa
    from gpuext.backends.cuda import ksw_extend2 as gpu

    assert not np.any(gpu.supports(jobs)), f"{what}: jobs rejected"
    got = gpu.run(jobs, mode=mode)
    bad = want.mismatches(got)
    assert len(bad) == 0, (f"{what} [{mode}]: {len(bad)} of {jobs.n} jobs differ; first job {bad[0]}: "
                           f"bwa {want.row(bad[0])} vs gpu {got.row(bad[0])}")
    cells = bwa.cells(jobs, n_threads=2)
    assert np.array_equal(gpu.last_stats["cells"], cells), f"{what} [{mode}]: DP cell counts differ"


@pytest.mark.parametrize("mode", ["auto", "thread", "warp"])
@pytest.mark.parametrize("seed", [11, None])
def test_fuzzed_jobs(mode, seed):
    from gpuext._native import bwa

    seed = seed if seed is not None else int(time.time_ns() % 2**31)
    jobs = random_jobs(np.random.default_rng(seed), 2500)
    _check(jobs, bwa.extend2(jobs, n_threads=2), mode, f"fuzz seed {seed}")


@pytest.mark.oracle
@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.realdata) if c in REAL else c for c in CASES])
def test_bwa_dump_replay(case, tmp_path_factory):
    try:
        run = bwa_dumps(tmp_path_factory).run(case)
    except FileNotFoundError as e:
        pytest.skip(f"data set unavailable: {e}")
    _, jobs, want = read_dump(run.dump_t1)
    for mode in ("auto", "thread"):
        _check(jobs, want, mode, case)


def test_supports_and_subsets():
    from gpuext._native import bwa
    from gpuext.backends.cuda import ksw_extend2 as gpu

    jobs = random_jobs(np.random.default_rng(3), 300)
    jobs.e_ins[5] = 0
    jobs.h0[6] = 0
    reasons = gpu.supports(jobs)
    assert reasons[5] == gpu.REJECT_GAP and reasons[6] == gpu.REJECT_INPUT
    idx = np.flatnonzero(reasons == 0)[::-1][:200]
    got = gpu.run(jobs, idx)
    want = bwa.extend2(jobs, idx)
    assert len(want.mismatches(got)) == 0
    with pytest.raises(ValueError):
        gpu.run(jobs, [5])
    assert gpu.run(jobs, []).n == 0


@pytest.mark.parametrize("pinned", [False, True])
@pytest.mark.parametrize("split", [False, True])
def test_chunked_uploads(pinned, split, monkeypatch):
    """Many small upload chunks (kernels start per chunk), jobs staged or page-locked (pin()), kernels
    overlapped with the uploads or not."""
    from gpuext._native import bwa
    from gpuext.backends.cuda import ksw_extend2 as gpu

    monkeypatch.setattr(gpu, "CHUNK_BYTES", 1 << 14)
    jobs = random_jobs(np.random.default_rng(23), 1500)
    want = bwa.extend2(jobs, n_threads=2)
    if pinned:
        jobs = gpu.pin(jobs)
    got = gpu.run(jobs, split=split)
    assert gpu.last_stats["chunks"] > 1
    assert gpu.last_stats["direct"] == pinned
    assert len(want.mismatches(got)) == 0
    assert np.array_equal(gpu.last_stats["cells"], bwa.cells(jobs, n_threads=2))


def test_long_queries_ring_wraps():
    """Queries far longer than the ring of their kernel (bands of w = 100 and 200, stale row -1 cells)."""
    from gpuext._native import bwa

    jobs = random_jobs(np.random.default_rng(29), 300, max_qlen=9000)
    _check(jobs, bwa.extend2(jobs, n_threads=2), "auto", "long queries")
