"""Pipeline tools: BAM output (sorted, indexed), gpuext compare, gpuext verify, progress, gpuext stats."""
from __future__ import annotations

import os
import pty
import subprocess
import sys

import pytest

from gpuext.io.bam import read_sam_text
from gpuext.io.compare import compare_texts

from ..conftest import ROOT, run_gpuext

pysam = pytest.importorskip("pysam")

REF = str(ROOT / "data" / "lambda" / "lambda_ref.fa.gz")
READS = str(ROOT / "data" / "lambda" / "lambda_subreads.fq.gz")


@pytest.fixture(scope="module")
def stock_sam(oracle, tmp_path_factory):
    path = tmp_path_factory.mktemp("stock") / "stock.sam"
    with open(path, "wb") as f:
        subprocess.run([str(oracle), "-ax", "map-pb", "-t2", REF, READS], stdout=f, check=True, stderr=subprocess.DEVNULL)
    return path


def test_sorted_bam_equals_samtools_sorted_stock(stock_sam, tmp_path):
    out = tmp_path / "x.bam"
    r = run_gpuext(["map", "-ax", "map-pb", "-t2", "--sort", "-o", str(out), REF, READS])
    assert r.returncode == 0, r.stderr.decode()[-500:]
    ref_bam = tmp_path / "stock.sorted.bam"
    pysam.sort("-o", str(ref_bam), str(stock_sam))
    rep = compare_texts(read_sam_text(str(ref_bam)), read_sam_text(str(out)), ignore_pg="all")
    assert rep.identical and rep.records_same >= 117, rep.summary()
    assert (tmp_path / "x.bam.bai").exists()
    with pysam.AlignmentFile(str(out)) as f:
        assert sum(1 for _ in f.fetch("lambda_NEB3011", 10000, 20000)) > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stock.sorted.bam", "x.bam", "x.bam.bai"]


def test_unsorted_bam_and_bad_combinations(stock_sam, tmp_path):
    out = tmp_path / "u.bam"
    assert run_gpuext(["map", "-ax", "map-pb", "-o", str(out), REF, READS]).returncode == 0
    stock_bam = tmp_path / "stock.bam"      # through BAM too: BAM stores de:f as a 32-bit float
    pysam.view("-b", "-o", str(stock_bam), str(stock_sam), catch_stdout=False)
    rep = compare_texts(read_sam_text(str(stock_bam)), read_sam_text(str(out)), ignore_pg="all")
    assert rep.identical, rep.summary()
    r = run_gpuext(["map", "-x", "map-pb", "-o", str(tmp_path / "p.bam"), REF, READS], text=True)
    assert r.returncode != 0 and "needs SAM output" in r.stderr
    r = run_gpuext(["map", "-ax", "map-pb", "--sort", REF, READS], text=True)
    assert r.returncode != 0 and "--sort needs -o FILE.bam" in r.stderr


def _plant(src, dst, mode):
    lines = src.read_text().split("\n")
    k = next(i for i, line in enumerate(lines) if line and not line.startswith("@") and line.split("\t")[9] != "*")
    if mode == "base":
        f = lines[k].split("\t")
        f[9] = ("A" if f[9][40] != "A" else "C").join([f[9][:40], f[9][41:]])
        lines[k] = "\t".join(f)
    else:
        del lines[k]
    dst.write_text("\n".join(lines))
    return dst


@pytest.mark.parametrize("mode,field", [("base", "SEQ"), ("missing", None)])
def test_compare_finds_planted_differences(stock_sam, tmp_path, mode, field):
    same = run_gpuext(["compare", str(stock_sam), str(stock_sam)], text=True)
    assert same.returncode == 0
    bad = _plant(stock_sam, tmp_path / "bad.sam", mode)
    r = run_gpuext(["compare", str(stock_sam), str(bad)], text=True)
    assert r.returncode == 1
    if field:
        assert "1 different" in r.stderr and f"{field} (1)" in r.stderr
    else:
        assert "different" in r.stderr and ("only in A" in r.stderr)


@pytest.mark.parametrize("mode", ["base", "missing"])
def test_verify_finds_planted_differences(oracle, tmp_path, mode):
    fake = tmp_path / "fake_minimap2"
    fake.write_text(f"""#!{sys.executable}
import subprocess, sys
out = subprocess.run([{str(oracle)!r}, *sys.argv[1:]], capture_output=True).stdout.decode().split("\\n")
k = next(i for i, l in enumerate(out) if l and not l.startswith("@") and l.split("\\t")[9] != "*")
if {mode!r} == "base":
    f = out[k].split("\\t"); f[9] = ("A" if f[9][40] != "A" else "C").join([f[9][:40], f[9][41:]]); out[k] = "\\t".join(f)
else:
    del out[k]
sys.stdout.write("\\n".join(out))
""")
    fake.chmod(0o755)
    ok = run_gpuext(["verify", "--oracle", str(oracle), "--", "-ax", "map-pb", REF, READS], text=True)
    assert ok.returncode == 0, ok.stderr[-500:]
    bad = run_gpuext(["verify", "--oracle", str(fake), "--", "-ax", "map-pb", REF, READS], text=True)
    assert bad.returncode == 1 and "DIFFERENT" in bad.stderr
    sampled = run_gpuext(["verify", "--oracle", str(oracle), "--sample", "20", "--", "-ax", "map-pb", REF, READS],
                         text=True)
    assert sampled.returncode == 0 and "records: 2" in sampled.stderr


def _run_on_tty(args):
    """Run gpuext with stderr on a pseudo-terminal; return (status, what it printed there)."""
    master, slave = pty.openpty()
    p = subprocess.Popen([sys.executable, "-m", "gpuext", *args], stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return p.wait(), b"".join(chunks).decode(errors="replace")


def test_progress_on_a_terminal_only(datasets):
    files = datasets("ecoli-ont")
    args = ["map", "--progress-interval", "0.2", "-ax", "map-ont", "-t2", *files]
    rc, tty_err = _run_on_tty(args)
    assert rc == 0
    assert "[M::gpuext::progress" in tty_err and "reads/s" in tty_err and "backend busy" in tty_err
    assert "[M::gpuext::map" in tty_err and "extension jobs" in tty_err       # the final summary
    piped = subprocess.run([sys.executable, "-m", "gpuext", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert piped.returncode == 0 and b"gpuext::progress" not in piped.stderr
    rc, quiet_err = _run_on_tty(["map", "--quiet", *args[1:]])
    assert rc == 0 and "gpuext::progress" not in quiet_err and "[M::gpuext" not in quiet_err


def test_stats_counts_and_plot(stock_sam, tmp_path):
    png = tmp_path / "s.png"
    r = run_gpuext(["stats", str(stock_sam), "--plot", str(png)], text=True)
    assert r.returncode == 0, r.stderr
    got = dict(line.split("\t", 1) for line in r.stdout.strip().split("\n"))
    with pysam.AlignmentFile(str(stock_sam)) as f:
        recs = list(f)
    assert int(got["records"]) == len(recs)
    assert int(got["unmapped"]) == sum(r.is_unmapped for r in recs)
    assert int(got["supplementary"]) == sum(r.is_supplementary for r in recs)
    assert "median" in got["identity"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert run_gpuext(["stats", str(tmp_path / "none.bam")]).returncode == 2
