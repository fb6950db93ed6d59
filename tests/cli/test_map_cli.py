"""`gpuext map` as a command: version, header, atomic output, bad input, and edge-case reads.

Where stock minimap2 succeeds, gpuext's records must equal its records; where the input is bad,
gpuext must print one [E::...] line, exit non-zero, and leave no output file (not even a partial or
temporary one).
"""
from __future__ import annotations

import gzip
import random
import subprocess
from pathlib import Path

import pytest

from gpuext.io.compare import compare_texts

from ..conftest import ROOT, run_gpuext

LAMBDA_REF = ROOT / "data" / "lambda" / "lambda_ref.fa.gz"
LAMBDA_READS = ROOT / "data" / "lambda" / "lambda_subreads.fq.gz"
ECOLI_REF = ROOT / "data" / "ecoli" / "e_coli_k12.fa.gz"


def _fasta_seq(path: Path) -> str:
    with gzip.open(path, "rt") as f:
        return "".join(line.strip() for line in f if not line.startswith(">"))


def _write_fastq(path: Path, reads: list[tuple[str, str]]) -> Path:
    with open(path, "w") as f:
        for name, seq in reads:
            f.write(f"@{name}\n{seq}\n+\n{'?' * len(seq)}\n")
    return path


def _leftovers(d: Path, stem: str) -> list[str]:
    return sorted(p.name for p in d.iterdir() if stem in p.name)


def test_version():
    r = run_gpuext(["map", "--version"], text=True)
    assert r.returncode == 0
    assert r.stdout.startswith("gpuext 0.1.0 (minimap2 2.31-r1302)")


def test_minimap2_version_flag_is_stock_and_asks_no_backend(oracle):
    """-V prints what stock minimap2 prints and exits 0, whatever the backend options: here a GPU that no machine
    has (--gpu 99), which made the run fail after the version until the thirty-third session."""
    stock = subprocess.run([str(oracle), "-V"], capture_output=True, text=True)
    r = run_gpuext(["map", "--backend", "cuda", "--gpu", "99", "-V"], text=True)
    assert stock.returncode == 0 and stock.stdout.strip(), stock.stderr
    assert r.returncode == 0, r.stderr
    assert r.stdout == stock.stdout


def test_header_has_stock_lines_then_gpuext_pg(oracle):
    args = ["-ax", "map-pb", "-R", r"@RG\tID:x\tSM:y", str(LAMBDA_REF), str(LAMBDA_READS)]
    stock = subprocess.run([str(oracle), *args], capture_output=True, check=True).stdout
    ours = run_gpuext(["map", "--backend", "cpu", *args], check=True).stdout
    sh = [line for line in stock.split(b"\n") if line.startswith(b"@")]
    oh = [line for line in ours.split(b"\n") if line.startswith(b"@")]
    assert oh[:-1] == sh                      # minimap2's header, @PG included, unchanged
    assert oh[-1].startswith(b"@PG\tID:gpuext\tPN:gpuext\tPP:minimap2\tVN:0.1.0\tCL:gpuext map --backend cpu -ax")
    assert b"--backend" not in sh[-1] and b"--backend" not in oh[-2]


def test_output_file_equals_stdout_and_leaves_no_temporary(tmp_path):
    out = tmp_path / "out.sam"
    args = ["map", "-ax", "map-pb", str(LAMBDA_REF), str(LAMBDA_READS)]
    r = run_gpuext([*args, "-o", str(out)])
    assert r.returncode == 0, r.stderr
    rep = compare_texts(out.read_bytes(), run_gpuext(args).stdout)
    assert rep.records_same >= 117 and rep.header_diff == 1 and not rep.records_diff, rep.summary()  # CL differs by -o
    assert _leftovers(tmp_path, "out") == ["out.sam"]


def test_hook_sees_every_extension_call():
    r = run_gpuext(["map", "--backend", "cpu", "-ax", "map-pb", str(LAMBDA_REF), str(LAMBDA_READS)], text=True)
    assert r.returncode == 0
    line = [x for x in r.stderr.splitlines() if "extension jobs" in x][-1]
    assert int(line.split("backend cpu: ")[1].split()[0]) > 100


@pytest.mark.parametrize("case", ["missing-reads", "missing-ref", "unreadable-ref", "truncated-fastq",
                                  "malformed-fastq", "truncated-gzip", "bad-option"])
def test_bad_input_fails_cleanly(case, tmp_path):
    out = tmp_path / "out.sam"
    reads, ref = str(LAMBDA_READS), str(LAMBDA_REF)
    extra: list[str] = []
    if case == "missing-reads":
        reads = str(tmp_path / "nope.fq")
    elif case == "missing-ref":
        ref = str(tmp_path / "nope.fa")
    elif case == "unreadable-ref":
        d = tmp_path / "dir.fa"
        d.mkdir()
        ref = str(d)
    elif case == "truncated-fastq":
        text = gzip.decompress(LAMBDA_READS.read_bytes())
        (tmp_path / "t.fq").write_bytes(text[: len(text) // 2 + 7])
        reads = str(tmp_path / "t.fq")
    elif case == "malformed-fastq":
        reads = str(_write_fastq(tmp_path / "m.fq", [("ok", "ACGT" * 50)]))
        with open(reads, "a") as f:
            f.write("@bad\nACGTACGTACGT\n+\n!!!!\n")
    elif case == "truncated-gzip":
        data = LAMBDA_READS.read_bytes()
        (tmp_path / "t.fq.gz").write_bytes(data[: len(data) // 2])
        reads = str(tmp_path / "t.fq.gz")
    elif case == "bad-option":
        extra = ["--backend", "quantum"]
    r = run_gpuext(["map", *extra, "-ax", "map-pb", "-o", str(out), ref, reads], text=True)
    assert r.returncode != 0
    errors = [x for x in r.stderr.splitlines() if x.startswith(("[E::", "[ERROR]", "ERROR"))]
    assert errors, r.stderr
    assert not out.exists()
    assert _leftovers(tmp_path, "out") == []


def _same_as_stock(oracle, args: list[str]) -> None:
    stock = subprocess.run([str(oracle), *args], capture_output=True)
    ours = run_gpuext(["map", *args])
    assert stock.returncode == 0 and ours.returncode == 0, ours.stderr
    rep = compare_texts(stock.stdout, ours.stdout)
    assert rep.identical, rep.summary()


def test_odd_reads_identical_to_stock(oracle, tmp_path):
    rng = random.Random(5)
    ref = _fasta_seq(ECOLI_REF)[:600_000]
    (tmp_path / "ref.fa").write_text(">chunk\n" + ref + "\n")
    iupac = list(ref[1000:9000])
    for i in range(0, len(iupac), 97):
        iupac[i] = rng.choice("RYKMSWBDHVNrykmswn")
    long_read = list(ref[50_000:450_000])          # a 400 kb read with ~1% substitutions
    for i in range(0, len(long_read), 100):
        long_read[i] = rng.choice("ACGT")
    reads = [("iupac", "".join(iupac)), ("empty", ""), ("one", "A"), ("long400k", "".join(long_read)),
             ("lower", ref[200_000:203_000].lower()), ("rna", ref[300_000:302_000].replace("T", "U"))]
    fq = _write_fastq(tmp_path / "odd.fq", reads)
    _same_as_stock(oracle, ["-ax", "map-ont", "-t2", str(tmp_path / "ref.fa"), str(fq)])
    _same_as_stock(oracle, ["-cx", "map-ont", "--cs", str(tmp_path / "ref.fa"), str(fq)])


def test_empty_target_gives_every_read_unmapped_like_stock(oracle, tmp_path):
    (tmp_path / "empty.fa").write_text("")
    _same_as_stock(oracle, ["-ax", "map-pb", str(tmp_path / "empty.fa"), str(LAMBDA_READS)])


def test_prebuilt_index_and_gzip_input(oracle, tmp_path):
    mmi = tmp_path / "lambda.mmi"
    r = run_gpuext(["map", "-x", "map-pb", "-d", str(mmi), str(LAMBDA_REF)])
    assert r.returncode == 0 and mmi.stat().st_size > 0
    stock_mmi = tmp_path / "stock.mmi"
    subprocess.run([str(oracle), "-x", "map-pb", "-d", str(stock_mmi), str(LAMBDA_REF)], check=True, capture_output=True)
    assert mmi.read_bytes() == stock_mmi.read_bytes()
    _same_as_stock(oracle, ["-a", "-x", "map-pb", str(mmi), str(LAMBDA_READS)])


@pytest.mark.parametrize("preset_queues", [None, "32"])
def test_map_asks_for_8_hardware_queues_unless_set(preset_queues, tmp_path):
    """gpuext map is one process per run: it leaves the driver's 8 hardware queues (32 cost ~0.5 s of each
    process's start and exit), set before the cuda package's own default of 32 can apply; a value the user
    set is kept."""
    import os
    import sys

    env = {k: v for k, v in os.environ.items() if k != "CUDA_DEVICE_MAX_CONNECTIONS"}
    if preset_queues:
        env["CUDA_DEVICE_MAX_CONNECTIONS"] = preset_queues
    code = ("import os, sys; from gpuext.cli import map as m; "
            f"rc = m.main(['--backend', 'cpu', '--quiet', '-o', {str(tmp_path / 'o.sam')!r}, '-a', "
            f"{str(LAMBDA_REF)!r}, {str(LAMBDA_READS)!r}]); import gpuext.backends.cuda; "
            "print(rc, os.environ['CUDA_DEVICE_MAX_CONNECTIONS'])")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.split()[-2:] == ["0", preset_queues or "8"]


def test_timeline_has_every_stage_in_order(tmp_path):
    """GPUEXT_TIMELINE=FILE (profiling): gpuext map writes its stages, each pipeline step of each batch and
    the process's exit as TSV rows (what, thread, start, end), and the stages happen in their order."""
    import os
    import sys

    tl = tmp_path / "tl.tsv"
    env = dict(os.environ, GPUEXT_TIMELINE=str(tl))
    subprocess.run([sys.executable, "-m", "gpuext", "map", "--backend", "cpu", "--quiet", "-o", str(tmp_path / "o.sam"),
                    "-a", str(LAMBDA_REF), str(LAMBDA_READS)], env=env, check=True, cwd=ROOT, capture_output=True)
    rows = [line.split("\t") for line in tl.read_text().splitlines()]
    assert rows[0] == ["what", "thread", "start", "end"]
    rows = rows[1:]
    first = {}
    for r in rows:
        first.setdefault(r[0].split(" (")[0], (float(r[2]), float(r[3])))
    stages = ["gpuext map", "run_cli", "index loaded", "batch 1 step 0", "batch 1 step 1", "after run_cli", "exit"]
    assert all(st in first for st in stages + ["resolve", "resolved"]), sorted(first)
    # each stage begins after the one before it ends (run_cli spans the steps: they begin after it begins)
    for a, b in zip(stages, stages[1:]):
        assert first[b][0] >= (first[a][0] if a == "run_cli" else first[a][1]), (a, b)
    # the backend is chosen in a thread started before minimap2, and minimap2 goes on past its index only after
    assert first["gpuext map"][1] <= first["resolve"][0] <= first["resolved"][0] <= first["index loaded"][1]
    assert first["after run_cli"][0] >= first["run_cli"][1] >= first["batch 1 step 1"][1]
    assert all(float(r[3]) >= float(r[2]) for r in rows)


@pytest.mark.parametrize("out", ["stdout", "-o"])
@pytest.mark.parametrize("args", [["--backend", "cuda"], ["--backend", "auto", "--gpu", "99"]])
def test_unusable_gpu_stops_the_run_before_minimap2_writes(args, out, tmp_path):
    """A GPU that cannot be used ends the run before minimap2 writes anything (the driver is asked while minimap2
    builds its index, which waits for the answer): one [E::gpuext::map] line, a non-zero exit, nothing on stdout,
    no -o file and no temporary file. Without a GPU (CI), --backend cuda has none; with one, GPU 99 does not exist
    (auto picks cuda only when the driver sees a GPU)."""
    from gpuext.backends import cuda

    if args[1] == "cuda" and cuda.device_count() > 0:
        args = ["--backend", "cuda", "--gpu", "99"]
    if args[1] == "auto" and cuda.device_count() == 0:
        pytest.skip("auto without a GPU is the cpu backend")
    o = ["-o", str(tmp_path / "out.sam")] if out == "-o" else []
    r = run_gpuext(["map", *args, *o, "-a", str(LAMBDA_REF), str(LAMBDA_READS)], text=True)
    assert r.returncode != 0 and r.stdout == ""
    errors = [x for x in r.stderr.splitlines() if x.startswith("[E::")]
    assert len(errors) == 1 and errors[0].startswith("[E::gpuext::map] --backend cuda:"), r.stderr
    assert list(tmp_path.iterdir()) == []


def test_stock_backend_is_minimap2_alone(oracle):
    """--backend stock: minimap2 without the batch engine, its output the stock tool's."""
    args = ["-ax", "map-pb", "-t2", str(LAMBDA_REF), str(LAMBDA_READS)]
    stock = subprocess.run([str(oracle), *args], capture_output=True)
    ours = run_gpuext(["map", "--backend", "stock", *args])
    assert stock.returncode == 0 and ours.returncode == 0, ours.stderr
    rep = compare_texts(stock.stdout, ours.stdout)
    assert rep.identical, rep.summary()


@pytest.mark.parametrize("broken", ["engine", "backend", "backend-api"])
@pytest.mark.parametrize("reads", ["lambda", "empty"])
def test_engine_that_cannot_be_built_fails_the_run(reads, broken, tmp_path):
    """The engine and the backend are made while minimap2 runs: if either fails, the run still fails with one
    error line and a non-zero exit and no -o file, whether a batch needed the engine (the error stops the pipeline)
    or none did (empty input); also as gpuext.Aligner calls it (command_line=False: the backend made first)."""
    import sys

    path = LAMBDA_READS if reads == "lambda" else _write_fastq(tmp_path / "empty.fq", [])
    plant = ("from gpuext.engine import rounds\nrounds.BatchEngine.__init__ = broken\n" if broken == "engine" else
             "import gpuext.backends as b\nb.resolve = broken\n")
    code = ("import sys\n"
            "def broken(*a, **k): raise RuntimeError('planted: no engine')\n" + plant +
            "from gpuext.cli import map as m\n"
            f"sys.exit(m.main(['--backend', 'cpu', '--quiet', '-o', {str(tmp_path / 'o.sam')!r}, '-a', "
            f"{str(LAMBDA_REF)!r}, {str(path)!r}], command_line={broken != 'backend-api'}))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode != 0
    errors = [x for x in r.stderr.splitlines() if x.startswith("[E::")]
    assert len(errors) == 1 and "planted: no engine" in errors[0], r.stderr
    assert not (tmp_path / "o.sam").exists()
