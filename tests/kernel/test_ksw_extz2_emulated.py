"""CUDA ksw_extz2 vs the stock ksw2 code without a GPU: kernels/ksw_extz2.cu on the CPU emulator of tests/emu,
launched by the real launcher (gpuext/backends/cuda/ksw_extz2.py) through a fake CuPy; every result field
and every CIGAR of every job must equal gpuext.backends.cpu's.

Each case runs tests/emu/run_extz2.py in a process of its own (the fake CuPy must not reach the other
tests), in parallel. Jobs: extz2_jobs of tests/kernel/test_ksw_extz2.py (the GPU test's generator: one gap
cost per batch from a wide range, random matrices, GENERIC_SC, every flag combination minimap2 passes plus
SCORE_ONLY and APPROX_DROP), shorter. Cases: a fixed seed and a fresh one (printed), the threads of a block
in reverse order (a lane reading another's value before it is written shows in one of the two orders), and
a shuffled subset cut into chunks by a one-job memory budget, gap costs whose int8 arithmetic wraps, and
jobs of bands over 2048 wide (blocks of
512 threads) in both thread orders.
"""
from __future__ import annotations

import os
import platform
import shutil
import time

import pytest

from tests.emu.drive import report, run_cases

FRESH = int(time.time_ns() % 2**31)

# name: (driver arguments, environment)
CASES = {
    "seed-5": (["--batches", "8", "--jobs", "40", "--seed", "5"], {}),
    "fresh": (["--batches", "8", "--jobs", "40", "--seed", str(FRESH)], {}),
    "fresh-reversed": (["--batches", "4", "--jobs", "40", "--seed", str(FRESH + 1)], {"GX_EMU_REVERSE": "1"}),
    "chunked": (["--batches", "3", "--jobs", "30", "--seed", "7", "--chunked", "--live"], {}),
    # gap costs whose int8 arithmetic wraps (2(q+e) over 127, a negative q): ksw2's boundary value v1 is
    # negative, and its sign extension sets three more lanes
    **{f"wrapping-gap-{q}-{e}": (["--batches", "3", "--jobs", "40", "--seed", "13", "--live", f"--gap={q},{e}"], {})
       for q, e in ((95, 7), (-1, 3))},
    # bands over 2048 wide: blocks of 512 threads, in both thread orders
    "wide": (["--batches", "2", "--jobs", "16", "--seed", "9", "--wide", "3", "--live", "--expect-threads", "512"], {}),
    "wide-fresh-reversed": (["--batches", "2", "--jobs", "16", "--seed", str(FRESH + 2), "--wide", "3", "--live",
                             "--expect-threads", "512"], {"GX_EMU_REVERSE": "1"}),
}

pytestmark = pytest.mark.skipif(shutil.which("g++") is None or platform.machine() != "x86_64",
                                reason="the kernel emulator needs g++ on x86-64")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    from gpuext.backends.cuda.loader import kernel_source
    from tests.emu.build import build

    d = os.environ.get("GPUEXT_EMU_DIR") or tmp_path_factory.mktemp("emu")
    build(kernel_source("ksw_extz2.cu"), d)   # once, before the cases share it
    return run_cases("run_extz2", CASES, d)


@pytest.mark.parametrize("case", list(CASES))
def test_emulated(case, runs):
    if "fresh" in case:
        print(f"fresh seed {FRESH}")
    r = runs[case]
    assert r.returncode == 0, report(case, CASES[case], r)
