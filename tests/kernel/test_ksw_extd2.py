"""CUDA ksw_extd2 vs the stock ksw2 C code on fresh random jobs (every field and every CIGAR).

Each run draws new jobs (the seed is printed on failure): lengths 1 bp to 50 kb, bands from 0 to
the whole matrix, Z-drop on and off, end bonus, the flag combinations minimap2 passes (gap fill
exact and APPROX_MAX, right extension, left extension RIGHT|REV_CIGAR), GENERIC_SC with a
transition matrix, N bases, and the scoring of map-ont, map-hifi, asm5 and sr. Short jobs run in
the register kernels, the others in the shared- or global-memory ones. CuPy is imported only
inside the tests.
"""
from __future__ import annotations

import os
import time

import numpy as np
import pytest

from gpuext.engine.jobs import (KERNEL_EXTD2, KSW_EZ_APPROX_MAX, KSW_EZ_EXTZ_ONLY, KSW_EZ_GENERIC_SC,
                                KSW_EZ_REV_CIGAR, KSW_EZ_RIGHT, JobBatch, ResultBatch, Scoring)

# preset: (a, b, q, e, q2, e2, zdrop, end_bonus, extension w, gap-fill w), options.c:14-193
PRESETS = {
    "map-ont": (2, 4, 4, 2, 24, 1, 400, -1, 751, 30001),
    "map-hifi": (1, 4, 6, 2, 26, 1, 400, -1, 751, 30001),
    "asm5": (1, 19, 39, 3, 81, 1, 200, -1, 1501, 150001),
    "sr": (2, 8, 12, 2, 24, 1, 100, 10, 151, 151),
}
FLAG_SETS = (0, KSW_EZ_APPROX_MAX, KSW_EZ_EXTZ_ONLY, KSW_EZ_EXTZ_ONLY | KSW_EZ_RIGHT | KSW_EZ_REV_CIGAR)


def score_matrix(a: int, b: int, sc_ambi: int = 1, transition: int = 0) -> np.ndarray:
    """minimap2's ksw_gen_ts_mat (align.c:11-36): row = target base, column = query base."""
    mat = np.full((5, 5), -abs(sc_ambi), np.int8)
    mat[:4, :4] = -abs(b)
    np.fill_diagonal(mat[:4, :4], abs(a))
    if transition and transition != b:
        t = -abs(transition)
        mat[0, 2] = mat[1, 3] = mat[2, 0] = mat[3, 1] = t
    return mat.reshape(-1)


def _mutate(rng, t: np.ndarray, err: float, n_rate: float) -> np.ndarray:
    """A query from a target: substitutions, short and long indels, junk blocks, N runs."""
    out, i, n = [], 0, len(t)
    while i < n:
        x = rng.random()
        if x < err * 0.5:
            out.append(rng.integers(0, 4)); i += 1
        elif x < err * 0.75:
            L = int(rng.geometric(0.3 if rng.random() < 0.9 else 0.02))
            out.extend(rng.integers(0, 4, L))
        elif x < err:
            i += int(rng.geometric(0.3 if rng.random() < 0.9 else 0.02))
        elif x < err + 0.0005:
            out.extend(rng.integers(0, 4, int(rng.integers(20, 400)))); i += int(rng.integers(0, 400))
        else:
            out.append(t[i]); i += 1
    q = np.asarray(out, np.uint8)
    if n_rate > 0 and len(q):
        for _ in range(rng.poisson(n_rate * len(q)) + 1):
            p = int(rng.integers(0, len(q)))
            q[p:p + int(rng.integers(1, 20))] = 4
    return q


def _sequence(rng, L: int) -> np.ndarray:
    kind = rng.random()
    if kind < 0.15:  # low complexity: short tandem repeats make ties everywhere
        unit = rng.integers(0, 4, int(rng.integers(1, 6)))
        return np.resize(unit, L).astype(np.uint8)
    s = rng.integers(0, 4, L).astype(np.uint8)
    if kind < 0.25 and L > 10:
        s[rng.random(L) < 0.02] = 4
    return s


def random_jobs(rng, preset: str, n: int, max_len: int = 50000, transition: int = 0,
                cell_budget: float = 4e8) -> JobBatch:
    """n random extd2 jobs with one preset's scoring; GENERIC_SC on every job when transition."""
    a, b, q, e, q2, e2, zd, eb, w_ext, w_fill = PRESETS[preset]
    mat = score_matrix(a, b, 1 if rng.random() < 0.8 else 0, transition)
    qs, ts, W, Z, E, F = [], [], [], [], [], []
    cells = 0.0
    for _ in range(n):
        u = rng.random()
        if u < 0.35:
            L = int(rng.integers(1, 41))          # tiny: padding lanes everywhere
        elif u < 0.75:
            L = int(rng.integers(20, 1500))
        elif u < 0.95:
            L = int(rng.integers(1500, 8000))
        else:
            L = int(rng.integers(8000, max(max_len, 8000) + 1))
        L = max(1, min(L, max_len))
        t = _sequence(rng, L)
        v = rng.random()
        if v < 0.1:
            qq = _sequence(rng, max(1, int(L * rng.uniform(0.3, 1.7))))  # unrelated
        else:
            qq = _mutate(rng, t, rng.choice([0.0, 0.01, 0.05, 0.12, 0.25]), rng.choice([0, 0, 0.001]))
            if len(qq) == 0:
                qq = rng.integers(0, 4, 1).astype(np.uint8)
        if rng.random() < 0.1:  # very different lengths: band exit
            qq = qq[: max(1, int(len(qq) * rng.uniform(0.05, 0.7)))]
        if rng.random() < 0.5:
            qq, t = t, qq
            t = t.copy()
        flag = int(rng.choice(FLAG_SETS))
        if transition:
            flag |= KSW_EZ_GENERIC_SC
        big = max(len(qq), len(t))
        x = rng.random()
        if L <= 40:
            w = int(rng.integers(-1, 42))
        elif x < 0.3:
            w = w_ext
        elif x < 0.45:
            w = w_fill if big < 12000 else w_ext
        elif x < 0.55:
            w = -1 if big < 12000 else w_ext
        else:
            w = int(rng.integers(0, 300))
        zdrop = int(rng.choice([-1, zd, zd, int(rng.integers(10, 200))]))
        end_bonus = int(rng.choice([eb, eb, -1, 0, 10, int(rng.integers(1, 60))]))
        c = float(min(len(qq), len(t)) * (2 * (w if w >= 0 else big) + 1))
        if cells + c > cell_budget and L > 1500:
            continue
        cells += min(c, len(qq) * len(t))
        qs.append(qq), ts.append(t), W.append(w), Z.append(zdrop), E.append(end_bonus), F.append(flag)
    return JobBatch.of(Scoring(mat, q, e, q2, e2), qs, ts, KERNEL_EXTD2, W, Z, E, F)


def describe_diff(batch: JobBatch, ref: ResultBatch, got: ResultBatch, limit: int = 10) -> str:
    lines = []
    for i, name in ref.diff(got)[:limit]:
        lines.append(f"job {i} qlen={batch.qoff[i+1]-batch.qoff[i]} tlen={batch.toff[i+1]-batch.toff[i]} "
                     f"w={batch.w[i]} zdrop={batch.zdrop[i]} eb={batch.end_bonus[i]} flag={batch.flag[i]:#x}: "
                     f"{name} ref={getattr(ref, name)[i] if name != 'cigar' else ref.cigar_of(i)[:8]} "
                     f"gpu={getattr(got, name)[i] if name != 'cigar' else got.cigar_of(i)[:8]}")
    return "\n".join(lines)


def _rerun_matches(batch: JobBatch, ref, what: str) -> None:
    """The batch on the GPU again (under the caller's knobs): every field and CIGAR as ref's."""
    from gpuext.backends.cuda import ksw_extd2

    got = ksw_extd2.run(batch)
    d = ref.diff(got)
    assert not d, f"seed {SEED}: {len(d)} differences ({what})\n" + describe_diff(batch, ref, got)


def _run_both(batch: JobBatch):
    from gpuext.backends import cpu
    from gpuext.backends.cuda import ksw_extd2

    reasons = ksw_extd2.supports(batch)
    idx = np.flatnonzero(reasons == 0)
    assert len(idx) == batch.n, f"kernel rejected {batch.n - len(idx)} jobs: {np.unique(reasons)}"
    ref = cpu.run(batch, n_threads=os.cpu_count() or 1)
    got = ksw_extd2.run(batch, idx)
    return ref, got


SEED = int(os.environ.get("GPUEXT_TEST_SEED", time.time_ns() % 2**32))


@pytest.mark.gpu
@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_random_jobs_match_ksw2(preset):
    rng = np.random.default_rng([SEED, list(PRESETS).index(preset)])
    batch = random_jobs(rng, preset, 3000)
    ref, got = _run_both(batch)
    d = ref.diff(got)
    assert not d, f"seed {SEED}: {len(d)} differences\n" + describe_diff(batch, ref, got)


@pytest.mark.gpu
@pytest.mark.parametrize("preset", ["map-ont", "sr"])
def test_generic_sc_transitions_match_ksw2(preset):
    rng = np.random.default_rng([SEED, 17, list(PRESETS).index(preset)])
    batch = random_jobs(rng, preset, 1500, transition=2)
    ref, got = _run_both(batch)
    d = ref.diff(got)
    assert not d, f"seed {SEED}: {len(d)} differences\n" + describe_diff(batch, ref, got)


@pytest.mark.gpu
def test_tiny_bands_match_ksw2():
    """Short sequences with w from -1 to 40: padding lanes feed most band-edge cells."""
    rng = np.random.default_rng([SEED, 99])
    batches = []
    for preset in PRESETS:
        b = random_jobs(rng, preset, 4000, max_len=40)
        ref, got = _run_both(b)
        d = ref.diff(got)
        assert not d, f"seed {SEED} {preset}: {len(d)} differences\n" + describe_diff(b, ref, got)
        batches.append(b.n)
    assert sum(batches) > 0


def test_full_band_kernels_only_where_exact(monkeypatch):
    """The full-band kernels take a batch's jobs only where their arithmetic is ksw2's: the scoring
    of map-ont, map-hifi and sr qualifies; a gap cost over int8's in-band range, a score outside the
    byte table ([-16, 15]: asm5's mismatch -19) or GPUEXT_KSW_FB=0 keeps them out (the ring kernels
    run those jobs). Bit 1, two jobs per warp, follows bit 0 unless GPUEXT_KSW_FBH=0; bit 2, big exact
    jobs in the pass pipeline (ksw_extd2_dp_fbx), follows bit 0 unless GPUEXT_KSW_FBX=0; bits 8 and up,
    the qlen + tlen bound of two jobs per lane in 16-bit halves, follow bit 0 unless GPUEXT_KSW_FB2=0
    (map-ont: 8 (L + 2 * 24 + 2 L + 25 + 2) + 135 <= 32767 for L <= 1334); bit 4, the pass pipeline in 16-bit
    halves (ksw_extd2_dp_fbr), follows bit 0 where _fbr_ok's bound holds (map-ont and map-hifi, not sr's bigger
    scores nor a match score of 15) unless GPUEXT_KSW_FBR=0."""
    from gpuext.backends.cuda.ksw_extd2 import _fb_on, _swapped_gaps
    from gpuext.engine.jobs import Scoring

    for preset, (a, b, q, e, q2, e2, *_) in PRESETS.items():
        s = Scoring(score_matrix(a, b), q, e, q2, e2)
        fb = _fb_on(*_swapped_gaps(s), s.mat)
        assert fb & 255 == {"asm5": 0, "sr": 7}.get(preset, 23), preset
        assert (fb >> 8 > 500) == (preset != "asm5"), preset
    assert _fb_on(4, 2, 24, 1, score_matrix(2, 4)) >> 8 == 1334
    assert not _fb_on(4, 2, 100, 30, score_matrix(2, 4))            # (q+e)+(q2+e2) > 127
    assert not _fb_on(4, 2, 24, 1, score_matrix(16, 4))             # match score 16
    assert not _fb_on(4, 2, 24, 1, score_matrix(2, 17))             # mismatch -17
    assert _fb_on(4, 2, 24, 1, score_matrix(15, 16)) & 255 == 7
    monkeypatch.setenv("GPUEXT_KSW_FBR", "0")
    assert _fb_on(4, 2, 24, 1, score_matrix(2, 4)) & 255 == 7
    monkeypatch.setenv("GPUEXT_KSW_FBH", "0")
    assert _fb_on(4, 2, 24, 1, score_matrix(2, 4)) & 255 == 5
    monkeypatch.setenv("GPUEXT_KSW_FBX", "0")
    assert _fb_on(4, 2, 24, 1, score_matrix(2, 4)) & 255 == 1
    monkeypatch.setenv("GPUEXT_KSW_FB2", "0")
    assert _fb_on(4, 2, 24, 1, score_matrix(2, 4)) == 1
    monkeypatch.setenv("GPUEXT_KSW_FB", "0")
    assert not _fb_on(4, 2, 24, 1, score_matrix(2, 4))


@pytest.mark.parametrize("preset_queues", [None, "8"])
def test_cuda_package_asks_for_32_hardware_queues(preset_queues):
    """Importing the cuda backend asks the driver for 32 hardware queues for the CUDA context to come
    (each launch class has a stream; with 8 queues a class can wait behind another's dispatch), and keeps
    a value the user set."""
    import subprocess
    import sys
    from pathlib import Path

    env = {k: v for k, v in os.environ.items() if k != "CUDA_DEVICE_MAX_CONNECTIONS"}
    if preset_queues:
        env["CUDA_DEVICE_MAX_CONNECTIONS"] = preset_queues
    code = "import os, gpuext.backends.cuda; print(os.environ['CUDA_DEVICE_MAX_CONNECTIONS'])"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == (preset_queues or "32")


def test_launch_order_puts_long_running_classes_first():
    """The launch order of ksw_extd2's classes: warp teams (their jobs are the longest chains of
    anti-diagonals), then the pass pipeline, then full-band classes of several passes or long rows
    and wide one-warp rings, ahead of the short gap fills (fb4..fb8, two per warp in fbh16, the
    register kernels, small rings), and the stream priorities never rise along that order (lower ranks run on streams the
    block scheduler serves first), except that the pass pipeline is launched right after the teams (and the
    opt-in ring and band pipelines that may take their jobs)."""
    from gpuext.backends.cuda.ksw_extd2 import FBP_K, KSW_NCLS, _class_key, _launch_order, _launch_rank

    keys = [_class_key(c) for c in range(KSW_NCLS - 1)]
    order = _launch_order(keys)
    pos = {k: i for i, k in enumerate(order)}
    teams = [k for k in keys if k[0] in (16, 8)]
    short = [k for k in keys if k[0] in ("reg", "fbh") or (k[0] == "fb" and k[1] <= 8) or (k[0] == 1 and 0 <= k[1] <= 8)]
    assert ("fbh", 16) in short
    assert max(pos[k] for k in teams) < pos[("fbp", FBP_K)] < min(pos[k] for k in keys if k[0] in ("fb", "fbh", 1, "reg"))
    assert max(pos[k] for k in keys if k in (("fb", 16), ("fb", 12), ("fb", 10), (1, -1), (1, 10))) < \
        min(pos[k] for k in short)
    assert pos[("fbp", FBP_K)] == max(pos[k] for k in keys if k[0] in (16, 8, "rp", "fbb")) + 1
    prios = [_launch_rank(k)[0] for k in order if k[0] != "fbp"]
    assert prios == sorted(prios, reverse=True) and prios[0] > prios[-1] == 0


def test_launch_order_starts_few_warp_classes_early():
    """A launch class of few warps (its time is its longest job's, e.g. a few long thin jobs in a
    register class) goes right after the teams and the pass pipeline, on a stream of higher priority
    than the throughput-bound classes; teams keep their place whatever their size."""
    from gpuext.backends.cuda.ksw_extd2 import (FBP_K, FEW_WARPS, REG_SHAPES, _class_key, _class_warps, _launch_order,
                                                _launch_rank, KSW_NCLS)

    keys = [_class_key(c) for c in range(KSW_NCLS - 1)]
    many = {k: 100 * FEW_WARPS for k in keys}
    small_reg = ("reg", 6, True)
    assert _class_warps(small_reg, 53, REG_SHAPES) <= FEW_WARPS < _class_warps(("fbh", 16), 19992, REG_SHAPES)
    warps = {**many, small_reg: _class_warps(small_reg, 53, REG_SHAPES), (8, 10): 8 * 245}
    order = _launch_order(keys, warps)
    pos = {k: i for i, k in enumerate(order)}
    assert order == _launch_order(keys, {**many, (8, 10): 8 * 245})[:pos[small_reg]] + [small_reg] + \
        [k for k in _launch_order(keys, many)[pos[small_reg]:] if k != small_reg]
    assert pos[("fbp", FBP_K)] < pos[small_reg] < min(pos[("fbh", 16)], pos[("fb", 8)], pos[("reg", 8, True)])
    assert max(pos[k] for k in keys if k[0] in (16, 8)) < pos[("fbp", FBP_K)]
    assert _launch_rank(small_reg, warps[small_reg])[0] > _launch_rank(("fbh", 16), many[("fbh", 16)])[0]


def test_upload_waves_slice_the_jobs_by_bytes(monkeypatch):
    """Upload waves: only the throughput classes run by waves (not the teams or the pipelines), the kernel's
    wave count is the launcher's MAX_WAVES, and _wave_ends cuts a page-locked call into WAVES slices of about
    equal query bytes, each ending past its last job's sequences (none for a small call, for staged
    sequences, or with GPUEXT_KSW_WAVES=1); by the plan kernel's rule (the first wave whose ends lie
    KSW_WAVE_PAD bytes past both sequences) every wave gets jobs."""
    import re

    from gpuext.backends.cuda import ksw_extd2 as k
    from gpuext.backends.cuda.loader import kernel_source

    src = kernel_source("ksw_extd2.cu", {})
    assert int(re.search(r"#define KSW_WAVES (\d+)", src).group(1)) == k.MAX_WAVES >= k.WAVES
    pad = int(re.search(r"#define KSW_WAVE_PAD (\d+)", src).group(1))
    assert k.WAVE_MARGIN > pad
    kinds = {k._class_key(c)[0] for c in range(k.KSW_NCLS - 1) if k._wave_class(c)}
    assert kinds == {1, "reg", "fb", "fbh", "fb2", "fbh2"}
    rng = np.random.default_rng([SEED, 3])
    b = random_jobs(rng, "map-ont", 400, max_len=2000)
    assert len(k._wave_ends(b)) == 0   # staged (not page-locked)
    monkeypatch.setattr("gpuext.backends.cuda.staging.is_pinned", lambda a: True)
    assert len(k._wave_ends(b)) == 0   # under WAVE_BYTES
    nbytes = len(b.qseq) + len(b.tseq)
    monkeypatch.setenv("GPUEXT_KSW_WAVE_BYTES", str(nbytes // 10))
    we = k._wave_ends(b)
    nw = k.WAVES - 1
    assert len(we) == 2 * nw
    qe, te = we[:nw], we[nw:]
    assert np.all(np.diff(qe) > 0) and np.all(np.diff(te) >= 0) and qe[-1] <= len(b.qseq) and te[-1] <= len(b.tseq)
    qb = np.diff(np.concatenate([[0], qe, [len(b.qseq)]]))
    assert qb.max() - qb.min() <= 2 * int(b.qlen().max()) + 2 * k.WAVE_MARGIN   # about equal query bytes
    wave = ((b.qoff[1:, None] + pad > qe) | (b.toff[1:, None] + pad > te)).sum(1)   # ksw_extd2_plan's rule
    assert np.all(np.diff(wave) >= 0) and set(wave) == set(range(k.WAVES))
    monkeypatch.setenv("GPUEXT_KSW_WAVES", "1")
    assert len(k._wave_ends(b)) == 0


@pytest.mark.gpu
def test_supports_rejects_other_kernels_and_oversized_jobs(monkeypatch):
    from gpuext.backends.cuda import ksw_extd2

    rng = np.random.default_rng([SEED, 5])
    b = random_jobs(rng, "map-ont", 20, max_len=300)
    b.kernel[0] = 1
    r = ksw_extd2.supports(b)
    assert r[0] == ksw_extd2.REJECT_KERNEL and (r[1:] == 0).all()
    r = ksw_extd2.supports(b, gpu_mem=64)
    assert (r[1:] == ksw_extd2.REJECT_MEMORY).all()
    long = (b.qlen() + b.tlen() >= 300) & (b.kernel == 0)
    assert long.any() and not long.all()
    monkeypatch.setattr(ksw_extd2, "MAX_QT", 300)  # the exact maximum's key limit, 2**20 in use
    r = ksw_extd2.supports(b)
    assert (r[long] == ksw_extd2.REJECT_LENGTH).all() and (r[~long & (b.kernel == 0)] == 0).all()


@pytest.mark.gpu
def test_warp_teams_match_ksw2(monkeypatch):
    """Every job wide enough runs on a team of 4 or 16 warps (normally only the largest do). The
    full-band kernels are off: the big full-band jobs, exact ones included (ksw_extd2_dp_fbx), would
    otherwise leave the 16-warp teams none in many seeds' batches."""
    from gpuext.backends.cuda import ksw_extd2

    monkeypatch.setattr(ksw_extd2, "BIG_JOB_SHARE", 0.0)
    monkeypatch.setenv("GPUEXT_KSW_FB", "0")
    rng = np.random.default_rng([SEED, 23])
    batch = random_jobs(rng, "map-hifi", 600, max_len=12000)
    ref, got = _run_both(batch)
    d = ref.diff(got)
    assert not d, f"seed {SEED}: {len(d)} differences\n" + describe_diff(batch, ref, got)
    assert ksw_extd2.last_stats["jobs_per_team_size"][16] > 0


@pytest.mark.gpu
@pytest.mark.parametrize("kc,preset,transition", [(1, "map-hifi", 0), (2, "map-ont", 0), (1, "map-ont", 2)])
def test_ring_pipeline_matches_ksw2(kc, preset, transition, monkeypatch):
    """With GPUEXT_KSW_RP=KC the exact jobs that would get a team run in the ring pipeline (a warp per
    chunk of 128 KC target slots, chunks on different SMs handing records up through global memory):
    band-limited and full-band, Z-dropped or not, GENERIC_SC, all match ksw2."""
    from gpuext.backends.cuda import ksw_extd2

    monkeypatch.setattr(ksw_extd2, "BIG_JOB_SHARE", 0.0)
    monkeypatch.setenv("GPUEXT_KSW_RP", str(kc))
    rng = np.random.default_rng([SEED, 29, kc, transition])
    batch = random_jobs(rng, preset, 400, max_len=12000, transition=transition)
    ref, got = _run_both(batch)
    d = ref.diff(got)
    assert not d, f"seed {SEED}: {len(d)} differences\n" + describe_diff(batch, ref, got)
    assert ksw_extd2.last_stats["jobs_per_team_size"]["rp"] > 0


@pytest.mark.gpu
@pytest.mark.parametrize("preset", ["map-ont", "map-hifi"])
def test_upload_waves_match_ksw2(preset, monkeypatch):
    """Sequences in page-locked memory go up in upload waves (ksw_extd2.WAVES slices of consecutive jobs),
    and the throughput classes' jobs of each slice start as soon as it is up, while later slices are still
    being copied: every field and CIGAR as ksw2's, with short jobs on the slices' edges, three runs."""
    from gpuext.backends.cuda import ksw_extd2

    rng = np.random.default_rng([SEED, 71, list(PRESETS).index(preset)])
    parts = [random_jobs(rng, preset, 3000, max_len=1500), random_jobs(rng, preset, 3000, max_len=60)]
    fb = random_jobs(rng, preset, 2000, max_len=1200)   # first-pass gap fills (the full-band kernels)
    fb.flag = np.where(rng.random(fb.n) < 0.5, KSW_EZ_APPROX_MAX, KSW_EZ_APPROX_MAX | KSW_EZ_REV_CIGAR).astype(np.int32)
    fb.w = np.maximum(fb.qlen(), fb.tlen()).astype(np.int32)
    batch = JobBatch.concat(parts + [fb])
    batch = ksw_extd2.pin(batch.subset(rng.permutation(batch.n)))   # short and long jobs on every slice's edges
    nbytes = len(batch.qseq) + len(batch.tseq)
    monkeypatch.setenv("GPUEXT_KSW_WAVE_BYTES", str(nbytes // ksw_extd2.WAVES + 1))
    ref, got = _run_both(batch)
    for r in range(3):
        if r:
            got = ksw_extd2.run(batch)
        assert ksw_extd2.last_stats["waves"] == ksw_extd2.WAVES
        d = ref.diff(got)
        assert not d, f"seed {SEED}, run {r}: {len(d)} differences\n" + describe_diff(batch, ref, got)


@pytest.mark.gpu
@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_full_band_kernels_match_ksw2(preset, monkeypatch):
    """APPROX_MAX jobs whose band covers the matrix (first-pass gap fills) run in the clean-DP
    kernels: those of one pass with qlen + tlen within the 16-bit bound two per lane (fbh16x2 up to
    256 columns, fb<K>x2 up to 512), the others in int32: those of at most 256 columns two per
    warp (ksw_extd2_dp_fbh16), the others a warp each (ksw_extd2_dp_fb<K>); with
    GPUEXT_KSW_FB2=0 all in int32, and with GPUEXT_KSW_FBH=0 too all a warp each: every K, one pass
    and several (query over 512 bp), N bases, all match ksw2; so do they as big jobs, those of
    several passes in ksw_extd2_dp_fbp (a block per pass, many SMs per job), and so do the long
    ones (FBP_ROWS target rows or more) that do not fit 16-bit halves; with GPUEXT_KSW_FB=0 none runs
    there."""
    from gpuext.backends.cuda import ksw_extd2
    from gpuext.engine.jobs import KSW_EZ_REV_CIGAR

    monkeypatch.setattr(ksw_extd2, "BIG_JOB_SHARE", 1.0)   # none is big (as among a batch's thousands)
    monkeypatch.setenv("GPUEXT_KSW_FBP_ROWS", "0")          # nor long (checked below)
    rng = np.random.default_rng([SEED, 43, list(PRESETS).index(preset)])
    batch = random_jobs(rng, preset, 1500, max_len=6000)
    batch.flag = np.where(rng.random(batch.n) < 0.5, KSW_EZ_APPROX_MAX, KSW_EZ_APPROX_MAX | KSW_EZ_REV_CIGAR)
    batch.flag = batch.flag.astype(np.int32)
    full = np.maximum(batch.qlen(), batch.tlen())
    batch.w = np.where(rng.random(batch.n) < 0.3, -1, full - 1 + rng.integers(0, 3, batch.n)).astype(np.int32)
    ref, got = _run_both(batch)
    d = ref.diff(got)
    assert not d, f"seed {SEED}: {len(d)} differences\n" + describe_diff(batch, ref, got)
    if preset == "asm5":   # its mismatch score (-19) is outside the full-band kernels' score table
        assert ksw_extd2.last_stats["jobs_per_team_size"]["fb"] == 0
        return
    live = (batch.qlen() > 0) & (batch.tlen() > 0)
    ql, short = batch.qlen(), batch.qlen() + batch.tlen() <= ksw_extd2._fb_on(
        *ksw_extd2._swapped_gaps(batch.scoring), np.asarray(batch.scoring.mat, np.int8).reshape(-1)) >> 8
    per = ksw_extd2.last_stats["jobs_per_team_size"]
    assert per["fbh2"] == (live & (ql <= 256) & short).sum() > 0 and per["fbh"] == (live & (ql <= 256) & ~short).sum()
    assert per["fb2"] == (live & (ql > 256) & (ql <= 512) & short).sum() > 0
    assert per["fb"] == (live & (ql > 256) & ((ql > 512) | ~short)).sum() > 0
    monkeypatch.setenv("GPUEXT_KSW_FB2", "0")   # int32 only
    _rerun_matches(batch, ref, "GPUEXT_KSW_FB2=0")
    fb = [c for c in ksw_extd2.last_stats["classes"] if c[0] == "fb"]
    assert {c[1] for c in fb} == {K for K in ksw_extd2.FB_K if K > 8} and sum(c[2] for c in fb) == \
        (live & (batch.qlen() > 256)).sum()
    assert ksw_extd2.last_stats["jobs_per_team_size"]["fbh"] == (live & (batch.qlen() <= 256)).sum()
    monkeypatch.setenv("GPUEXT_KSW_FBH", "0")   # a warp per job
    _rerun_matches(batch, ref, "GPUEXT_KSW_FBH=0")
    fb = [c for c in ksw_extd2.last_stats["classes"] if c[0] == "fb"]
    assert {c[1] for c in fb} == set(ksw_extd2.FB_K) and sum(c[2] for c in fb) == live.sum()
    monkeypatch.delenv("GPUEXT_KSW_FBH")
    monkeypatch.delenv("GPUEXT_KSW_FB2")
    monkeypatch.delenv("GPUEXT_KSW_FBP_ROWS")   # long jobs over the 16-bit bound: the pass pipeline
    _rerun_matches(batch, ref, "FBP_ROWS")
    long = live & (batch.tlen() >= ksw_extd2.FBP_ROWS) & ~(short & (ql <= 512))
    got = ksw_extd2.last_stats["jobs_per_team_size"]["fbp"]
    assert got == long.sum() > 0, f"seed {SEED}: {got} jobs in fbp, {long.sum()} long"
    monkeypatch.setattr(ksw_extd2, "BIG_JOB_SHARE", 0.0)   # every job big: a block per pass
    monkeypatch.setenv("GPUEXT_KSW_FBP_ROWS", "0")
    _rerun_matches(batch, ref, "fbp")
    got = ksw_extd2.last_stats["jobs_per_team_size"]["fbp"]
    assert got == (live & (ql > 512)).sum() > 0, f"seed {SEED}: {got} jobs in fbp, {(live & (ql > 512)).sum()} of several passes"
    monkeypatch.setenv("GPUEXT_KSW_FB", "0")
    _rerun_matches(batch, ref, "GPUEXT_KSW_FB=0")
    assert ksw_extd2.last_stats["jobs_per_team_size"]["fb"] == 0


@pytest.mark.gpu
@pytest.mark.parametrize("preset", ["map-ont", "map-hifi", "sr"])
def test_exact_full_band_pipeline_matches_ksw2(preset, monkeypatch):
    """Big exact jobs whose band covers the matrix (flags 0, EXTZ_ONLY, REV_CIGAR; random, low-complexity
    and small-Z-drop ones, some of several kb, so that the books block stops the passes while they run)
    take ksw_extd2_dp_fbx and match ksw2; with GPUEXT_KSW_FBX=0 the teams take them, also matching."""
    from gpuext.backends.cuda import ksw_extd2
    from tests.emu.run_extd2 import exact_full_band, repeat_jobs, zdrop_jobs

    rng = np.random.default_rng([SEED, 7])
    b = random_jobs(rng, preset, 200, max_len=3000)
    b = JobBatch.concat([b, repeat_jobs(rng, b, 100, *PRESETS[preset][6:8]),
                         zdrop_jobs(rng, b, 100, PRESETS[preset][7]), zdrop_jobs(rng, b, 8, PRESETS[preset][7], 6000)])
    exact_full_band(rng, b)
    monkeypatch.setattr(ksw_extd2, "BIG_JOB_SHARE", 0.0)
    ref, got = _run_both(b)
    d = ref.diff(got)
    assert not d, f"seed {SEED}: {len(d)} differences\n" + describe_diff(b, ref, got)
    live = (b.qlen() > 0) & (b.tlen() > 0)
    assert ksw_extd2.last_stats["jobs_per_team_size"]["fbx"] == live.sum()
    monkeypatch.setenv("GPUEXT_KSW_FBX", "0")
    _rerun_matches(b, ref, "GPUEXT_KSW_FBX=0")
    assert ksw_extd2.last_stats["jobs_per_team_size"]["fbx"] == 0


def _band_limited_batch(rng, preset: str, n_random: int, n_narrow: int, n_long: int) -> JobBatch:
    """Random jobs of the preset plus band-limited exact ones: n_narrow narrow bands (where padding slots
    and stale scores decide band cells), 40 bands of 100-961 and n_long 5,000-bp extensions of w 751
    (E. coli's longest)."""
    from tests.emu.run_extd2 import band_jobs, exact_extensions, narrow_band_jobs

    def draw_long():
        t = rng.integers(0, 4, 5000).astype(np.uint8)
        return _mutate(rng, t, 0.1, 0.01), t, 751

    b = random_jobs(rng, preset, n_random, max_len=3000)
    zd, eb = PRESETS[preset][6:8]
    return JobBatch.concat([b, narrow_band_jobs(rng, b, n_narrow, zd, eb), band_jobs(rng, b, 40, zd, eb),
                            exact_extensions(b, n_long, draw_long, zd, eb)])


@pytest.mark.gpu
@pytest.mark.parametrize("preset", ["map-ont", "map-hifi", "asm5", "sr"])
def test_band_pipeline_matches_ksw2(preset, monkeypatch):
    """Big band-limited exact jobs (the GPU test's flag sets: RIGHT among them; narrow bands, where
    padding slots and stale scores decide band cells, bands of 100-961 and a few 5,000-bp extensions of
    w 751, long enough that the books block stops running passes) take ksw_extd2_dp_fbb with
    GPUEXT_KSW_FBB=1 and match ksw2."""
    from gpuext.backends.cuda import ksw_extd2

    b = _band_limited_batch(np.random.default_rng([SEED, 11]), preset, 100, 150, 6)
    monkeypatch.setattr(ksw_extd2, "BIG_JOB_SHARE", 0.0)
    monkeypatch.setenv("GPUEXT_KSW_FBB", "1")
    ref, got = _run_both(b)
    d = ref.diff(got)
    assert not d, f"seed {SEED}: {len(d)} differences\n" + describe_diff(b, ref, got)
    ql, tl = b.qlen(), b.tlen()
    takes = ((ql > 0) & (tl > 0) & (b.w >= 32) & (b.w < np.maximum(ql, tl) - 1)
             & ((b.flag & (KSW_EZ_APPROX_MAX | KSW_EZ_GENERIC_SC)) == 0))
    assert takes.sum() > 150
    assert ksw_extd2.last_stats["jobs_per_team_size"]["fbb"] == takes.sum()


@pytest.mark.gpu
@pytest.mark.parametrize("w7b", ["1", "0"])
@pytest.mark.parametrize("preset", ["map-ont", "map-hifi"])
def test_middle_team_books_warp_matches_ksw2(preset, w7b, monkeypatch):
    """Band-limited exact extensions on the middle team (narrow bands, bands of 100-961, 5,000-bp
    extensions of w 751) match ksw2 with the books warp (ksw_extd2_dp_w7b_smem: H, keys and books a
    round behind the cells) and without it (GPUEXT_KSW_W7B=0: ksw_extd2_dp_w7p_smem)."""
    from gpuext.backends.cuda import ksw_extd2

    b = _band_limited_batch(np.random.default_rng([SEED, 13]), preset, 60, 100, 4)
    monkeypatch.setattr(ksw_extd2, "BIG_JOB_SHARE", 0.0)
    monkeypatch.setenv("GPUEXT_KSW_W7B", w7b)
    ref, got = _run_both(b)
    d = ref.diff(got)
    assert not d, f"seed {SEED}: {len(d)} differences\n" + describe_diff(b, ref, got)
    assert ksw_extd2.last_stats["jobs_per_team_size"][8] > 0


@pytest.mark.gpu
@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_register_kernels_match_ksw2(preset, monkeypatch):
    """Jobs whose ring has at most 1024 slots run in the register kernels (every ring size, both
    modes, jobs of different lengths sharing a warp; the default shapes, then the others); with
    GPUEXT_KSW_REG=0 in the shared-memory kernels: all match ksw2."""
    from gpuext.backends.cuda import ksw_extd2

    rng = np.random.default_rng([SEED, 41, list(PRESETS).index(preset)])
    batch = random_jobs(rng, preset, 2000, max_len=1000, transition=2 if rng.random() < 0.3 else 0)
    monkeypatch.setenv("GPUEXT_KSW_FB", "0")   # full-band APPROX_MAX jobs too
    monkeypatch.setenv("GPUEXT_KSW_REG", str(ksw_extd2.REG_LG_LIMIT))   # every register kernel shape
    ref, got = _run_both(batch)
    d = ref.diff(got)
    assert not d, f"seed {SEED}: {len(d)} differences\n" + describe_diff(batch, ref, got)
    assert ksw_extd2.last_stats["jobs_per_team_size"]["reg"] > batch.n // 2
    monkeypatch.setenv("GPUEXT_KSW_REG_SHAPES", "8:16x4,9:32x4")   # the other register kernels
    _rerun_matches(batch, ref, "16x4, 32x4")
    monkeypatch.setenv("GPUEXT_KSW_REG", "0")
    _rerun_matches(batch, ref, "GPUEXT_KSW_REG=0")
    assert ksw_extd2.last_stats["jobs_per_team_size"]["reg"] == 0


def _with_empty_sequences(rng, b: JobBatch, frac: float = 0.05) -> JobBatch:
    """b with the query or the target of about frac of its jobs cut to length 0."""
    qs = [b.qseq[b.qoff[i]:b.qoff[i + 1]] for i in range(b.n)]
    ts = [b.tseq[b.toff[i]:b.toff[i + 1]] for i in range(b.n)]
    for i in np.flatnonzero(rng.random(b.n) < frac):
        if rng.random() < 0.5:
            qs[i] = qs[i][:0]
        else:
            ts[i] = ts[i][:0]
    return JobBatch.of(b.scoring, qs, ts, b.kernel, b.w, b.zdrop, b.end_bonus, b.flag)


@pytest.mark.gpu
def test_chunks_subsets_and_empty_jobs_match_ksw2():
    """A shuffled subset of the jobs (rows follow job_idx), some with qlen or tlen 0, under a
    memory budget that cuts the call into many chunks; then the same jobs in one chunk."""
    from gpuext.backends import cpu
    from gpuext.backends.cuda import ksw_extd2

    rng = np.random.default_rng([SEED, 31])
    b = _with_empty_sequences(rng, random_jobs(rng, "map-ont", 500, max_len=4000))
    idx = rng.permutation(b.n)[: b.n * 3 // 4]
    ref = cpu.run(b.subset(idx), n_threads=os.cpu_count() or 1)
    dir_ub, lg = ksw_extd2._upper_bytes(b.qlen(), b.tlen(), b.w)
    need = ksw_extd2._job_bytes(b.qlen(), b.tlen(), dir_ub, lg, np.zeros(b.n, bool))
    # the budget: the largest job's bound (ksw2's allocation); the launcher sizes jobs tighter, so
    # every job fits and the call is cut into many chunks
    got = ksw_extd2.run(b, idx, gpu_mem=int(need.max()))
    assert ksw_extd2.last_stats["chunks"] > 3
    d = ref.diff(got)
    assert not d, f"seed {SEED}: {len(d)} differences (chunked)\n" + describe_diff(b.subset(idx), ref, got)
    got = ksw_extd2.run(b, idx)
    assert ksw_extd2.last_stats["chunks"] == 1
    d = ref.diff(got)
    assert not d, f"seed {SEED}: {len(d)} differences\n" + describe_diff(b.subset(idx), ref, got)
