"""CUDA ksw_extend2 vs BWA's own ksw_extend2 without a GPU: the kernels of ksw_extend2.cu on the CPU
emulator of tests/emu, launched by the real launcher (gpuext/backends/cuda/ksw_extend2.py) through a
fake CuPy; every output of every job and the DP cells must equal gpuext._native.bwa's.

Each case runs tests/emu/run_launcher.py in a process of its own (the fake CuPy must not reach the
other tests); the cases run in parallel, after one build of the emulator library (g++, a few
seconds; reused across sessions when $GPUEXT_EMU_DIR is set). Cases: fuzzed jobs of a fixed seed and
of a fresh one (printed) on every kernel choice (auto, whole-warp rings, thread kernel), the ring
kernels' unpacked row maximum (h0 >= 65536), many upload chunks, the thread kernel's row-buffer
arena in pieces (a small memory budget), and the simulated Illumina seed dump of tests/bwa.
tests/kernel/test_ksw_extend2.py makes the same comparison on a GPU.
"""
from __future__ import annotations

import os
import platform
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.bwa.dumps import bwa_dumps
from tests.emu.drive import run_driver

FRESH = int(time.time_ns() % 2**31)
FUZZ = ["--fuzz", "400"]
CASES = {f"fuzz-{name}-{mode}": [*FUZZ, "--seed", str(seed), "--mode", mode]
         for name, seed in (("11", 11), ("fresh", FRESH)) for mode in ("auto", "warp", "thread")}
CASES.update({"unpacked": [*FUZZ, "--seed", "13", "--big-h0"],
              "chunks": [*FUZZ, "--seed", "17", "--chunk-bytes", "4096"],
              "chunks-pinned": [*FUZZ, "--seed", "18", "--chunk-bytes", "4096", "--pin"],
              "arena": [*FUZZ, "--seed", "19", "--mode", "thread", "--gpu-mem", "200000"]})

pytestmark = pytest.mark.skipif(shutil.which("g++") is None or platform.machine() != "x86_64",
                                reason="the kernel emulator needs g++ on x86-64")


@pytest.fixture(scope="module")
def emu_dir(tmp_path_factory):
    from gpuext.backends.cuda.loader import kernel_source
    from tests.emu.build import build

    d = os.environ.get("GPUEXT_EMU_DIR") or tmp_path_factory.mktemp("emu")
    build(kernel_source("ksw_extend2.cu"), d)   # what the launcher's RawModule builds, once for all cases
    return d


@pytest.fixture(scope="module")
def runs(emu_dir):
    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        futs = {k: pool.submit(run_driver, "run_launcher", a, emu_dir) for k, a in CASES.items()}
    return {k: f.result() for k, f in futs.items()}


def _check(r: subprocess.CompletedProcess, what: str) -> None:
    assert r.returncode == 0, f"{what}: exit status {r.returncode}\n{(r.stdout + r.stderr)[-3000:]}"


@pytest.mark.parametrize("case", list(CASES))
def test_emulated(case, runs):
    if "fresh" in case:
        print(f"fresh fuzz seed {FRESH}")
    _check(runs[case], f"{case} ({' '.join(CASES[case])})")


@pytest.mark.oracle
def test_bwa_dump_emulated(emu_dir, tmp_path_factory):
    try:
        run = bwa_dumps(tmp_path_factory).run("sim-illumina-pe")
    except FileNotFoundError as e:
        pytest.skip(f"data set unavailable: {e}")
    _check(run_driver("run_launcher", ["--dump", str(run.dump_t1)], emu_dir), "sim-illumina-pe dump")
