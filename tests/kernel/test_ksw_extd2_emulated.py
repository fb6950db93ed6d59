"""CUDA ksw_extd2 vs the stock ksw2 code without a GPU: the kernels of ksw_extd2.cu on the CPU emulator
of tests/emu, launched by the real launcher (gpuext/backends/cuda/ksw_extd2.py) through a fake CuPy;
every result field and every CIGAR of every job must equal gpuext.backends.cpu's.

Each case runs tests/emu/run_extd2.py in a process of its own (the fake CuPy must not reach the other
tests); the cases run in parallel, after one build of the emulator library per kernel configuration
the cases use (g++, a few seconds each; reused across sessions when $GPUEXT_EMU_DIR is set). Jobs come
from random_jobs of tests/kernel/test_ksw_extd2.py (the GPU test's generator: every preset, its flag
combinations, bands from 0 to the whole matrix, Z-drop, end bonus, N bases), shorter and fewer, and
in most cases jobs that fill each register ring size (run_extd2.py --edges). Cases: a fixed seed and
a fresh one (printed) with the launcher's defaults and with the register kernels on for every ring
size (GPUEXT_KSW_REG=10); the same jobs in the other register shapes (GPUEXT_KSW_REG_SHAPES) and with
the register kernels off (GPUEXT_KSW_REG=0); the full-band kernels, a warp per job and a block per
pass of a big job, and two jobs per lane in 16-bit halves (fixed and fresh seed); GENERIC_SC with a transition matrix; tiny jobs and
bands; warp teams of 7 with a books warp, 7 (GPUEXT_KSW_W7B=0), 8 (GPUEXT_KSW_MID7=0) and 16 (BIG_JOB_SHARE 0), and of 4 (GPUEXT_KSW_TEAM_MID=4); rings in global memory (jobs over 16 kb that Z-drop
ends early) on 16 warps and on one; the one-warp kernel's other block sizes (GPUEXT_KSW_W1_BLOCKS); a
subset with empty sequences cut into many chunks; the ring pipeline (GPUEXT_KSW_RP) on band-limited
extensions and on 16-warp and global-ring-sized jobs; the exact pass pipeline (ksw_extd2_dp_fbx) on big exact
full-band jobs, low-complexity ones and ones with small Z-drops; teams, one-warp and pass-pipeline kernels with the
threads of a block taking turns in reverse order (a race between barriers changes the result in one of
the two orders). Each case also names the DP kernels that must have run. tests/kernel/test_ksw_extd2.py makes the same comparison on a GPU.
"""
from __future__ import annotations

import os
import platform
import shutil
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.emu.drive import report, run_cases

FRESH = int(time.time_ns() % 2**31)
# REG_LG_LIMIT: rings of up to 2**10 slots in registers; the full-band kernels off, so that the
# register kernels get the APPROX_MAX jobs whose band covers the matrix too
REG_ALL = {"GPUEXT_KSW_REG": "10", "GPUEXT_KSW_FB": "0"}
# --big-share 1: no job is big, as in the thousands of jobs of a GPU batch (in a few dozen, every wide
# one is), so that every ring of up to 2**10 slots goes to the register kernels
REG_JOBS = ["--jobs", "30", "--max-len", "1000", "--edges", "--big-share", "1"]


def _reg_e(*shapes) -> str:
    """The register kernels of these shapes (G, K), exact mode (the full-band kernels may take every
    APPROX_MAX job of a default run)."""
    return ",".join(f"reg{G}x{K}_e" for G, K in shapes)


def _reg(*shapes) -> str:
    """The register kernels of these shapes (G, K), both modes, as --expect names them."""
    return ",".join(f"reg{G}x{K}_{m}" for G, K in shapes for m in "ae")


# name: (driver arguments, the launcher's knobs in the environment)
CASES = {
    # (a fresh seed's 30 jobs per preset need not hold a big full-band job of at most 128 columns: fb4
    # is expected of seed 11 only)
    **{f"default-{tag}": (["--jobs", "30", "--max-len", "1200", "--edges", "--seed", str(seed),
                           "--expect", "w1_smem,w7b_smem," + fb4 + _reg_e((8, 2), (8, 4), (8, 8))], {})
       for tag, seed, fb4 in (("11", 11, "fb4,"), ("fresh", FRESH, ""))},
    **{f"reg-all-{tag}": ([*REG_JOBS, "--seed", str(seed), "--expect",
                           _reg((8, 2), (8, 4), (8, 8), (16, 8), (32, 8))], REG_ALL)
       for tag, seed in (("23", 23), ("fresh", FRESH))},
    "reg-other-shapes": ([*REG_JOBS, "--seed", "23", "--expect", _reg((16, 4), (32, 4))],
                         {**REG_ALL, "GPUEXT_KSW_REG_SHAPES": "8:16x4,9:32x4"}),
    "reg-off": ([*REG_JOBS, "--seed", "23", "--expect", "w1_smem_b4"],
                {"GPUEXT_KSW_REG": "0", "GPUEXT_KSW_W1_BLOCKS": "4"}),
    "full-band": (["--jobs", "100", "--max-len", "1500", "--full-band", "--big-share", "1", "--seed", "29",
                   "--expect", "fb4,fb5,fb6,fb8,fb10,fb12,fb16"], {"GPUEXT_KSW_FBH": "0", "GPUEXT_KSW_FB2": "0"}),
    "full-band-half": (["--jobs", "100", "--max-len", "1500", "--full-band", "--big-share", "1", "--seed", "37",
                        "--expect", "fbh16,fb10,fb12,fb16"], {"GPUEXT_KSW_FB2": "0"}),
    # two jobs per lane in 16-bit halves (the default for jobs within _fb16_len; fb16 keeps those of
    # several passes), and with the threads in reverse order
    "full-band-x2": (["--jobs", "100", "--max-len", "1500", "--full-band", "--big-share", "1", "--seed", "43",
                      "--expect", "fb4x2,fb5x2,fb6x2,fb8x2,fb10x2,fb12x2,fb16x2,fb16"], {"GPUEXT_KSW_FBH": "0"}),
    # the same with the throughput classes' blocks asking for unused dynamic shared memory (GPUEXT_KSW_TP_SMEM,
    # over the 48 KiB default: the launcher raises the kernels' limit first)
    "full-band-x2-tp-smem": (["--jobs", "60", "--max-len", "1500", "--full-band", "--big-share", "1", "--seed", "43",
                              "--expect", "fb4x2,fb8x2,fb16"], {"GPUEXT_KSW_FBH": "0", "GPUEXT_KSW_TP_SMEM": "57344"}),
    "full-band-half-x2-fresh": (["--jobs", "100", "--max-len", "1500", "--full-band", "--big-share", "1", "--seed",
                                 str(FRESH), "--expect", "fbh13x2,fb10x2,fb12x2,fb16x2"], {"GX_EMU_REVERSE": "1"}),
    # none big, but long (FBP_ROWS rows or more) and over the 16-bit bound: the pass pipeline too (in int32, the
    # 16-bit pass pipeline off; map-ont's scores take it by default)
    "full-band-long": (["--presets", "map-ont", "--jobs", "40", "--max-len", "2500", "--full-band", "--big-share",
                        "1", "--seed", "61", "--expect", "fbp,fbh13x2"], {"GPUEXT_KSW_FBR": "0"}),
    "full-band-team": (["--presets", "map-ont,sr", "--jobs", "30", "--max-len", "3000", "--full-band", "--big-share",
                        "0", "--seed", "31", "--expect", "fb4,fbp"], {}),
    # the pass pipeline in 16-bit halves (ksw_extd2_dp_fbr, the default where _fbr_ok holds): 64 virtual lanes of 3
    # columns, and of 4 (FBP_K 8), fresh seed in reverse thread order (sr's scores take the int32 pass pipeline)
    "full-band-fbr": (["--presets", "map-ont,map-hifi", "--jobs", "30", "--max-len", "4000", "--full-band",
                       "--big-share", "1", "--seed", "7", "--expect", "fbr"], {}),
    "full-band-fbr-k8-fresh-reversed": (["--presets", "map-ont,map-hifi", "--jobs", "30", "--max-len", "3000",
                                         "--full-band", "--big-share", "1", "--seed", str(FRESH), "--expect", "fbr"],
                                        {"GPUEXT_KSW_FBP_K": "8", "GX_EMU_REVERSE": "1"}),
    # big exact full-band jobs (second-pass gap fills, whole-matrix extensions) in the pass pipeline with
    # the books block (ksw_extd2_dp_fbx), with low-complexity and small-Z-drop jobs (ties at the
    # anti-diagonals' maxima), fixed and fresh seed, the latter in reverse thread order
    "exact-full-band": (["--presets", "map-ont,map-hifi,sr", "--jobs", "40", "--max-len", "1500",
                         "--exact-full-band", "--big-share", "0", "--seed", "7", "--expect", "fbx"], {}),
    "exact-full-band-fresh-reversed": (["--presets", "map-ont,map-hifi,sr", "--jobs", "40", "--max-len", "1500",
                                        "--exact-full-band", "--big-share", "0", "--seed", str(FRESH),
                                        "--expect", "fbx"], {"GX_EMU_REVERSE": "1"}),
    # big band-limited exact jobs in the pass pipeline by rows of ksw2's aligned region (ksw_extd2_dp_fbb,
    # opt-in), narrow bands (stale scores and padding slots decide band cells) and wide ones, fixed and
    # fresh seed, the latter in reverse thread order
    "band-pipeline": (["--presets", "map-ont,map-hifi,asm5,sr", "--jobs", "2", "--narrow-bands", "40", "--bands", "4",
                       "--big-share", "0", "--seed", "7", "--expect", "fbb"], {"GPUEXT_KSW_FBB": "1"}),
    "band-pipeline-fresh-reversed": (["--presets", "map-ont,map-hifi,asm5,sr", "--jobs", "2", "--narrow-bands", "40",
                                      "--bands", "4", "--big-share", "0", "--seed", str(FRESH), "--expect", "fbb"],
                                     {"GPUEXT_KSW_FBB": "1", "GX_EMU_REVERSE": "1"}),
    "generic-sc": (["--presets", "map-ont,sr", "--transition", "2", "--jobs", "40", "--edges", "--seed", "13",
                    "--expect", "w1_smem_b2"], {"GPUEXT_KSW_W1_BLOCKS": "2"}),
    "tiny": (["--jobs", "400", "--max-len", "40", "--seed", "17"], {}),
    "teams": (["--presets", "map-hifi", "--jobs", "30", "--max-len", "2000", "--edges", "--long", "2", "3200",
               "--big-share", "0", "--expect", "w8p_smem,w16_smem"], {}),
    # band-limited exact extensions on the middle team, two anti-diagonals per round (w <= 959) or one,
    # in both thread orders, fixed and fresh seeds, also GENERIC_SC
    # (on 7 warps and a books warp for rings of up to 2^10 slots; on 7 with the books between the barriers
    # with GPUEXT_KSW_W7B=0; on 8 with GPUEXT_KSW_MID7=0)
    **{f"teams-pairs-{tag}": (["--presets", "map-ont,map-hifi,asm5", "--jobs", "4", "--bands", "14", "--seed", str(seed),
                               "--big-share", "0", "--expect", kernel], knobs)
       for tag, seed, kernel, knobs in (("53", 53, "w7b_smem", {}),
                                        ("fresh-reversed", FRESH, "w7b_smem", {"GX_EMU_REVERSE": "1"}),
                                        ("7-warps", 53, "w7p_smem", {"GPUEXT_KSW_W7B": "0"}),
                                        ("8-warps", 53, "w8p_smem", {"GPUEXT_KSW_MID7": "0"}))},
    # the books warp without a per-slot H (KSW_BOOKS_SFX, an experiment): H of each anti-diagonal from one anchor
    # and the suffix sums of its bytes; fixed and fresh seed (the latter in reverse thread order), also GENERIC_SC
    **{f"teams-books-sfx-{tag}": (["--presets", presets, "--jobs", "4", "--bands", "14", "--seed", str(seed), *extra,
                                   "--big-share", "0", "--expect", "w7b_smem"],
                                  {"GPUEXT_KSW_DEFINES": "KSW_BOOKS_SFX=2", **knobs})
       for tag, presets, seed, extra, knobs in (("53", "map-ont,map-hifi,asm5,sr", 53, [], {}),
                                                ("fresh-reversed", "map-ont,map-hifi,asm5", FRESH, [], {"GX_EMU_REVERSE": "1"}),
                                                ("generic", "map-ont", 59, ["--transition", "2"], {}))},
    # band-limited extensions whose band leaves the target's end with single-slot anti-diagonals, twice with
    # the same en0 (line 329's old H[en0 - 1] from an anti-diagonal before), on the middle team
    "teams-band-exits": (["--presets", "map-ont,map-hifi,asm5,sr", "--jobs", "4", "--band-exits", "14", "--seed", "5",
                          "--big-share", "0", "--expect", "w7b_smem"], {}),
    "teams-pairs-generic": (["--presets", "map-ont", "--transition", "2", "--jobs", "4", "--bands", "14", "--seed",
                             "59", "--big-share", "0", "--expect", "w7b_smem"], {}),
    # the middle team one anti-diagonal per round (its exact jobs otherwise take two: dp_team's PAIRS)
    "teams-one-per-round": (["--presets", "map-ont,map-hifi", "--jobs", "30", "--max-len", "2000", "--edges", "--seed",
                             "47", "--big-share", "0", "--expect", "w8_smem"], {"GPUEXT_KSW_PAIRS": "0"}),
    # the middle team split: its jobs longest first, those over the call's cells / MID8 anti-diagonals on
    # 8 warps (two per round), the rest on 4
    "teams-split": (["--presets", "map-ont,map-hifi", "--jobs", "4", "--bands", "14", "--seed", "53", "--big-share",
                     "0", "--expect", "w7b_smem,w4_smem"], {"GPUEXT_KSW_MID8": "10000"}),
    "teams-w4": (["--presets", "map-hifi", "--jobs", "30", "--max-len", "2000", "--edges", "--long", "2", "3200",
                  "--big-share", "0", "--expect", "w4_smem,w16_smem"], {"GPUEXT_KSW_TEAM_MID": "4"}),
    # the ring pipeline (GPUEXT_KSW_RP): the middle team's band-limited extensions, in both thread
    # orders and with GENERIC_SC, and the 16-warp full-band exact jobs, also of global-memory ring size
    "ring-pipeline-bands": (["--presets", "map-ont,map-hifi,asm5", "--jobs", "4", "--bands", "14", "--seed", "53",
                             "--big-share", "0", "--expect", "rp1"], {"GPUEXT_KSW_RP": "1"}),
    "ring-pipeline-fresh-reversed": (["--presets", "map-ont", "--transition", "2", "--jobs", "4", "--bands", "14",
                                      "--seed", str(FRESH), "--big-share", "0", "--expect", "rp2"],
                                     {"GPUEXT_KSW_RP": "2", "GX_EMU_REVERSE": "1"}),
    "ring-pipeline-long": (["--presets", "map-hifi,sr", "--jobs", "30", "--max-len", "2000", "--edges", "--long", "2",
                            "3200", "--big-share", "0", "--expect", "rp1"], {"GPUEXT_KSW_RP": "1"}),
    "ring-pipeline-gmem": (["--presets", "map-ont", "--jobs", "20", "--max-len", "500", "--long", "2", "16400",
                            "--expect", "rp2"], {"GPUEXT_KSW_RP": "2"}),
    "gmem-w16": (["--presets", "map-ont", "--jobs", "20", "--max-len", "500", "--long", "2", "16400",
                  "--expect", "w16_gmem"], {}),
    "gmem-w1": (["--presets", "map-hifi", "--jobs", "20", "--max-len", "500", "--long", "2", "16400",
                 "--big-share", "1", "--expect", "w1_gmem"], {}),
    # every kernel kind with the fibers taking turns from the last thread to the first (GX_EMU_REVERSE,
    # emu.cpp): a shared value read before its writer wrote it, between two barriers, shows in one order
    "reversed-order": (["--presets", "map-ont,map-hifi", "--jobs", "30", "--max-len", "1500", "--edges", "--long", "2",
                        "3200", "--big-share", "0", "--seed", "41", "--expect", "w1_smem,w7b_smem,w16_smem,fbr"],
                       {"GX_EMU_REVERSE": "1"}),
    # the sequences in page-locked memory, sent in upload waves (as many slices of consecutive jobs as the kernels
    # allow, MAX_WAVES; a small GPUEXT_KSW_WAVE_BYTES): the throughput classes launched once per wave, each on its
    # slice's jobs
    "upload-waves": (["--presets", "map-ont,map-hifi", "--jobs", "60", "--max-len", "1200", "--edges", "--seed", "71",
                      "--pinned", "--waves", "4", "--expect", "w1_smem,w7b_smem,reg8x8_e"],
                     {"GPUEXT_KSW_WAVE_BYTES": "2048", "GPUEXT_KSW_WAVES": "4"}),
    "upload-waves-full-band-fresh": (["--presets", "map-ont", "--jobs", "100", "--max-len", "1500", "--full-band",
                                      "--big-share", "1", "--seed", str(FRESH), "--pinned", "--waves", "4",
                                      "--expect", "fbh13x2"], {"GPUEXT_KSW_WAVE_BYTES": "4096", "GPUEXT_KSW_WAVES": "4"}),
    # and the launch classes in class order on default-priority streams (the A/B knob)
    "chunked": (["--presets", "map-ont", "--jobs", "60", "--max-len", "1500", "--seed", "19", "--chunked"],
                {"GPUEXT_KSW_PRIO": "0"}),
}

pytestmark = pytest.mark.skipif(shutil.which("g++") is None or platform.machine() != "x86_64",
                                reason="the kernel emulator needs g++ on x86-64")


def _launcher_source(knobs: dict) -> str:
    """The source the launcher's load_module builds under these knobs (its defines from
    ksw_extd2.module_defines, as run() takes them), built once here for the drivers."""
    from gpuext.backends.cuda import ksw_extd2 as gpu
    from gpuext.backends.cuda.loader import kernel_source

    with pytest.MonkeyPatch.context() as mp:
        for k, v in knobs.items():
            mp.setenv(k, v)
        return kernel_source("ksw_extd2.cu", gpu.module_defines()[0])


@pytest.fixture(scope="module")
def emu_dir(tmp_path_factory):
    from tests.emu.build import build

    d = os.environ.get("GPUEXT_EMU_DIR") or tmp_path_factory.mktemp("emu")
    sources = {_launcher_source(knobs) for _, knobs in CASES.values()}
    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:   # g++ runs outside the GIL
        for f in [pool.submit(build, s, d) for s in sources]:
            f.result()
    return d


@pytest.fixture(scope="module")
def runs(emu_dir):
    return run_cases("run_extd2", CASES, emu_dir)


@pytest.mark.parametrize("case", list(CASES))
def test_emulated(case, runs):
    if "fresh" in case:
        print(f"fresh seed {FRESH}")
    r = runs[case]
    assert r.returncode == 0, report(case, CASES[case], r)


@pytest.mark.parametrize("seed", [3, FRESH])
def test_launch_order_bins(seed, emu_dir):
    """The launch order without a sort (ksw_extd2_bins_*) against an exact sort of the same keys: the
    classes in order, a middle-team class's long jobs first, sizes within an eighth of an octave."""
    from tests.emu.drive import run_driver

    args = ["--jobs", "20000", "--seed", str(seed)]
    r = run_driver("run_bins", args, emu_dir, knobs={})
    assert r.returncode == 0, report("bins", (args, {}), r)
    assert "order ok" in r.stdout
