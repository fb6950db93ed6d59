"""gpuext.Aligner (the Python API) gives the same records as stock minimap2 and mappy-like hits."""
from __future__ import annotations

import gzip
import subprocess

import pytest

import gpuext
from gpuext.io.compare import compare_texts

from ..conftest import ROOT

pytestmark = [pytest.mark.oracle]

REF = ROOT / "data" / "lambda" / "lambda_ref.fa.gz"
READS = ROOT / "data" / "lambda" / "lambda_subreads.fq.gz"


def _reads():
    with gzip.open(READS, "rt") as f:
        lines = f.read().split("\n")
    return [(lines[i][1:].split()[0], lines[i + 1], lines[i + 3]) for i in range(0, len(lines) - 3, 4)]


@pytest.fixture(scope="module")
def aligner():
    with gpuext.Aligner(str(REF), preset="map-pb", n_threads=2, backend="cpu") as a:
        yield a


def test_batch_lines_equal_stock_records(aligner, oracle):
    reads = _reads()
    res = aligner.map_batch(reads)
    assert [r.name for r in res] == [r[0] for r in reads]
    stock = subprocess.run([str(oracle), "-ax", "map-pb", "-t2", str(REF), str(READS)], capture_output=True, check=True)
    stock_records = b"\n".join(x for x in stock.stdout.split(b"\n") if x and not x.startswith(b"@"))
    ours = "\n".join(line for r in res for line in r.lines).encode()
    rep = compare_texts(stock_records, ours)
    assert rep.identical and rep.records_same >= len(reads), rep.summary()


def test_hits_agree_with_paf(aligner, oracle):
    reads = _reads()[:20]
    res = aligner.map_batch(reads, out_fmt="paf")
    n_hits = sum(len(r.hits) for r in res)
    assert n_hits > 0
    for r in res:
        for h, line in zip(r.hits, r.lines):
            f = line.split("\t")
            assert (h.q_st, h.q_en, h.r_st, h.r_en, h.ctg) == (int(f[2]), int(f[3]), int(f[7]), int(f[8]), f[5])
            assert h.cigar_str and h.mlen <= h.blen
    sam = aligner.map_batch(reads)
    for p, s in zip(res, sam):       # primary hits parsed from SAM land where PAF says
        prim_p = [(h.r_st, h.r_en, h.strand) for h in p.hits if h.is_primary]
        prim_s = [(h.r_st, h.r_en, h.strand) for h in s.hits if h.is_primary]
        assert prim_p == prim_s


def test_map_one_read_and_stdout_survives(aligner, capfd):
    name, seq, _ = _reads()[5]
    hits = list(aligner.map(seq, name=name))
    print("still here")
    assert "still here" in capfd.readouterr().out
    assert hits and all(h.ctg == "lambda_NEB3011" for h in hits)


def test_unknown_option_is_refused():
    with pytest.raises(TypeError, match="unknown option"):
        gpuext.Aligner(str(REF), preset="map-pb", bogus=1)


def test_aligner_leaves_the_hardware_queues_to_the_cuda_package():
    """gpuext map sets 8 CUDA hardware queues for its one-run process; a process using gpuext.Aligner is not one
    run, so the Aligner leaves the variable to the cuda package, which asks for 32 when it is imported."""
    import os
    import sys

    env = {k: v for k, v in os.environ.items() if k != "CUDA_DEVICE_MAX_CONNECTIONS"}
    code = ("import os, gpuext; r = ('r1', 'ACGT' * 100, None)\n"
            f"with gpuext.Aligner({str(REF)!r}, preset='map-pb', n_threads=1, backend='cpu') as a: a.map_batch([r])\n"
            "print(os.environ.get('CUDA_DEVICE_MAX_CONNECTIONS'))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.split()[-1] == "32"   # (gpuext map's choice would be 8)
