"""The batch engine (gpuext/engine/rounds.py) against stock minimap2 2.31: exact for any batch size,
thread count and round limit; most DP cells in the first round; --verify catches a bad backend;
the cpu backend equals the stock code on recorded job batches.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from gpuext.engine.jobs import JobBatch, Scoring
from gpuext.io.compare import compare_texts

from ..conftest import run_gpuext

pytestmark = [pytest.mark.oracle, pytest.mark.realdata]

SWEEP = [
    ("sim-ont", ["-x", "map-ont", "-a", "--MD", "--cs"]),
    ("sim-illumina-pairs", ["-x", "sr", "-a"]),
    ("sim-hifi", ["-x", "map-hifi", "-c", "--cs"]),
]


@pytest.mark.parametrize("name,args", SWEEP, ids=[s[0] for s in SWEEP])
@pytest.mark.parametrize("threads,batch,rounds", [("1", "50k", "0"), ("2", "300k", "1"), ("3", "2M", "3")])
def test_engine_sweep_identical(name, args, threads, batch, rounds, oracle, datasets):
    files = datasets(name)
    mm2 = [*args, "-t", threads, "-K", batch, *files]
    stock = subprocess.run([str(oracle), *mm2], capture_output=True, check=True)
    ours = run_gpuext(["map", "--backend", "cpu", "--rounds", rounds, *mm2])
    assert ours.returncode == 0, ours.stderr.decode()[-800:]
    rep = compare_texts(stock.stdout, ours.stdout)
    assert rep.identical and rep.records_same > 0, rep.summary()


@pytest.mark.parametrize("name,preset", [("ecoli-ont", "map-ont"), ("sim-ont", "map-ont"), ("sim-hifi", "map-hifi")])
def test_first_round_holds_most_cells(name, preset, datasets, tmp_path):
    stats = tmp_path / "stats.json"
    r = run_gpuext(["map", "--backend", "cpu", "--rounds", "3", "--stats", str(stats), "-cx", preset, "-t2",
                    "-o", str(tmp_path / "out.paf"), *datasets(name)])
    assert r.returncode == 0, r.stderr.decode()[-500:]
    s = json.loads(stats.read_text())
    assert s["reads"] > 0 and s["jobs"] > 0 and s["dp_cells"] > 0
    assert sum(x["cells"] for x in s["rounds"]) + sum(c for _, c in s["cpu_fallback"].values()) >= s["dp_cells"]
    assert s["first_round_cell_share"] >= 0.95, s


def test_verify_names_the_corrupted_job(tmp_path, datasets):
    out = tmp_path / "out.sam"
    env = dict(os.environ, GPUEXT_TEST_BACKENDS="1")
    r = subprocess.run([sys.executable, "-m", "gpuext", "map", "--backend", "corrupt", "--verify", "1.0",
                        "-ax", "map-pb", "-o", str(out), *datasets("lambda")], capture_output=True, text=True, env=env)
    assert r.returncode != 0
    line = [x for x in r.stderr.splitlines() if x.startswith("[E::")]
    assert line and "job" in line[0] and "differs from the stock ksw2 code" in line[0], r.stderr[-800:]
    assert not out.exists()


def test_corrupt_backend_without_verify_does_change_output(tmp_path, datasets, oracle):
    """The corrupting backend really corrupts: the verify test above is not vacuous."""
    env = dict(os.environ, GPUEXT_TEST_BACKENDS="1")
    args = ["-ax", "map-pb", *datasets("lambda")]
    bad = subprocess.run([sys.executable, "-m", "gpuext", "map", "--backend", "corrupt", *args], capture_output=True,
                         env=env, check=True)
    stock = subprocess.run([str(oracle), *args], capture_output=True, check=True)
    assert not compare_texts(stock.stdout, bad.stdout).identical


def test_cpu_backend_matches_its_threads_and_subsets():
    """The batch runner gives the same result on 1 and 4 threads and on any subset of jobs."""
    from gpuext.backends import cpu

    rng = np.random.default_rng(3)
    mat = np.full((5, 5), -4, np.int8)
    np.fill_diagonal(mat, 2)
    mat[4, :] = mat[:, 4] = -1
    n = 120
    ql, tl = rng.integers(0, 600, n), rng.integers(0, 600, n)
    base = rng.integers(0, 4, int(tl.sum()) + 1).astype(np.uint8)
    tseq = base[: tl.sum()]
    qseq = np.concatenate([np.where(rng.random(q) < 0.1, rng.integers(0, 5, q), tseq[o:o + q] if o + q <= len(tseq)
                                    else rng.integers(0, 4, q)).astype(np.uint8)
                           for q, o in zip(ql, np.r_[0, np.cumsum(tl)][:-1])])
    flags = rng.choice([0, 0x08, 0x40, 0x40 | 0x02 | 0x80], n).astype(np.int32)
    b = JobBatch(Scoring(mat.ravel(), 4, 2, 24, 1), qseq, np.r_[0, np.cumsum(ql)], tseq, np.r_[0, np.cumsum(tl)],
                 np.zeros(n, np.int8), rng.choice([10, 100, 751, -1], n).astype(np.int32),
                 rng.choice([-1, 100, 400], n).astype(np.int32), rng.choice([-1, 10], n).astype(np.int32), flags)
    one, four = cpu.run(b, 1), cpu.run(b, 4)
    assert one.diff(four) == []
    idx = rng.permutation(n)[:40]
    sub = cpu.run(b.subset(idx), 2)
    assert sub.diff(one.take(idx)) == []
    rest = np.setdiff1d(np.arange(n), idx)
    assert one.diff(one.assemble(n, [(idx, one.take(idx)), (rest, one.take(rest))])) == []
    assert (one.max > 0).any() and one.coff[-1] > 0
