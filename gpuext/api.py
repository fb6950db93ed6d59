"""gpuext's Python API: `Aligner`, in the spirit of mappy.Aligner, over the same engine as `gpuext map`.

    a = gpuext.Aligner("ref.fa", preset="map-ont", n_threads=8)
    for read in a.map_batch([("r1", "ACGT..."), ("r2", "GGCA...", "IIII...")]):
        print(read.name, [h.ctg for h in read.hits])
        print("\\n".join(read.lines))          # the SAM (or PAF) records, byte-identical to minimap2

The index is built once (kept as a .mmi in a temporary folder); each batch is mapped by minimap2's own
driver in this process, with extension through the chosen backend, so hits and lines are exactly what
`gpuext map` (and stock minimap2) writes for the same reads and options. Neighbours:
gpuext/cli/map.py (the same run, from the command line), gpuext/_native (minimap2).
"""
from __future__ import annotations

import os
import re
import tempfile
import threading
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

_RUN_LOCK = threading.Lock()   # minimap2's command line runs on process-wide state (stdout, hooks)

# mappy-style keyword -> minimap2 option (each takes a value)
_OPTION_FLAGS = {
    "k": "-k", "w": "-w", "min_cnt": "-n", "min_chain_score": "-m", "min_dp_score": "-s", "bw": "-r",
    "best_n": "-N", "max_frag_len": "-F", "zdrop": "-z", "end_bonus": "--end-bonus", "seed": "--seed",
    "mini_batch_size": "-K",
}


@dataclass
class Alignment:
    """One hit, with mappy's field names (0-based, half-open coordinates)."""

    ctg: str
    ctg_len: int
    r_st: int
    r_en: int
    strand: int
    q_st: int
    q_en: int
    mapq: int
    cigar_str: str
    is_primary: bool
    mlen: int
    blen: int
    NM: int
    tags: dict = field(default_factory=dict)

    def __str__(self) -> str:
        return (f"{self.q_st}\t{self.q_en}\t{'+-'[self.strand < 0]}\t{self.ctg}\t{self.ctg_len}\t{self.r_st}\t"
                f"{self.r_en}\t{self.mlen}\t{self.blen}\t{self.mapq}\t{self.cigar_str}")


@dataclass
class ReadResult:
    """The output for one read: its hits and its SAM/PAF records (unmapped reads have no hits)."""

    name: str
    hits: list[Alignment]
    lines: list[str]


class Aligner:
    """A minimap2 2.31 aligner whose extension runs on gpuext's backends.

    Args:
        fn_idx_in: reference FASTA(.gz) or prebuilt .mmi.
        preset: minimap2's -x (map-ont, map-hifi, sr, splice, asm5, ...).
        n_threads: minimap2's -t.
        backend: auto, cpu, cuda or stock (as `gpuext map --backend`).
        verbose: minimap2's -v; 3 logs like the command line, 1 (default) only warnings and errors.
        extra_args: any further minimap2 options, as on its command line (e.g. ["--eqx", "-Y"]).
        **options: mappy-style options: k, w, min_cnt, min_chain_score, min_dp_score, bw, best_n,
            max_frag_len, zdrop, end_bonus, seed, mini_batch_size.
    """

    def __init__(self, fn_idx_in: str, preset: str | None = None, n_threads: int = 3, backend: str = "auto",
                 extra_args: Sequence[str] = (), verbose: int = 1, **options):
        unknown = set(options) - set(_OPTION_FLAGS)
        if unknown:
            raise TypeError(f"unknown option(s): {', '.join(sorted(unknown))}")
        if not os.path.isfile(fn_idx_in):
            raise FileNotFoundError(fn_idx_in)
        self.backend = backend
        self.verbose = verbose
        self.args: list[str] = (["-x", preset] if preset else []) + ["-t", str(n_threads), "-v", str(verbose)]
        for key, value in options.items():
            self.args += [_OPTION_FLAGS[key], str(value)]
        self.args += list(extra_args)
        self._tmp = tempfile.TemporaryDirectory(prefix="gpuext-")
        self.index = os.path.join(self._tmp.name, "index.mmi")
        if _is_mmi(fn_idx_in):
            self.index = fn_idx_in
        elif self._run(["-d", self.index, fn_idx_in]) != 0:
            raise RuntimeError(f"failed to index {fn_idx_in}")
        self._seq_len = {}

    def __bool__(self) -> bool:
        return os.path.isfile(self.index)

    def close(self) -> None:
        self._tmp.cleanup()

    def __enter__(self) -> "Aligner":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _run(self, argv: list[str]) -> int:
        from . import log
        from .cli import map as cli_map

        with _RUN_LOCK:
            saved, log.verbose = log.verbose, self.verbose
            try:
                return cli_map.main(["--backend", self.backend, *self.args, *argv], command_line=False)
            finally:
                log.verbose = saved

    def map_batch(self, reads: Iterable, reads2: Iterable | None = None, out_fmt: str = "sam",
                  cs: bool = False, MD: bool = False) -> list[ReadResult]:
        """Map a batch of reads (name, seq[, qual]) tuples or pysam-like records; return one
        ReadResult per read, in input order. reads2: the mates, for paired-end mapping."""
        if out_fmt not in ("sam", "paf"):
            raise ValueError("out_fmt is 'sam' or 'paf'")
        d = tempfile.mkdtemp(dir=self._tmp.name)   # a folder per call: calls may come from several threads
        names = _write_fastx(os.path.join(d, "r1.fq"), reads)
        files = [os.path.join(d, "r1.fq")]
        if reads2 is not None:
            _write_fastx(os.path.join(d, "r2.fq"), reads2)
            files.append(os.path.join(d, "r2.fq"))
        out = os.path.join(d, "out")
        fmt = ["-a"] if out_fmt == "sam" else ["-c"]
        fmt += (["--cs"] if cs else []) + (["--MD"] if MD and out_fmt == "sam" else [])
        if self._run([*fmt, "-o", out, self.index, *files]) != 0:
            raise RuntimeError("mapping failed (see the log above)")
        with open(out) as f:
            text = f.read()
        for path in (out, *files):
            os.unlink(path)
        os.rmdir(d)
        return _collect(text, out_fmt, names, reads2 is not None)

    def map(self, seq: str, name: str = "read", qual: str | None = None) -> Iterator[Alignment]:
        """The hits of one read (mappy's Aligner.map), from minimap2's PAF with CIGAR."""
        rec = (name, seq) if qual is None else (name, seq, qual)
        yield from self.map_batch([rec], out_fmt="paf")[0].hits


def _is_mmi(path: str) -> bool:
    with open(path, "rb") as f:
        return f.read(4) == b"MMI\x02"


def _record(r) -> tuple[str, str, str | None]:
    if isinstance(r, (tuple, list)):
        return r[0], r[1], (r[2] if len(r) > 2 else None)
    return r.name, r.sequence, getattr(r, "quality", None)


def _write_fastx(path: str, reads: Iterable) -> list[str]:
    """Write reads as FASTQ; return their names in order."""
    names = []
    with open(path, "w") as f:
        for r in reads:
            name, seq, qual = _record(r)
            if not name or any(c.isspace() for c in name):
                raise ValueError(f"read names must be non-empty and without whitespace: {name!r}")
            f.write(f"@{name}\n{seq}\n+\n{qual if qual is not None else '!' * len(seq)}\n")
            names.append(name)
    return names


_CIGAR = re.compile(r"(\d+)([MIDNSHP=X])")


def _collect(text: str, fmt: str, names: list[str], paired: bool) -> list[ReadResult]:
    by_name: dict[str, ReadResult] = {}
    order = []
    for n in names:
        if n not in by_name:
            by_name[n] = ReadResult(n, [], [])
            order.append(n)
    ctg_len = {}
    for line in text.splitlines():
        if line.startswith("@"):
            m = re.match(r"@SQ\tSN:(\S+)\tLN:(\d+)", line)
            if m:
                ctg_len[m.group(1)] = int(m.group(2))
            continue
        f = line.split("\t")
        res = by_name.get(f[0])
        if res is None:  # minimap2 strips /1 /2 from paired names
            res = by_name.setdefault(f[0], ReadResult(f[0], [], []))
        res.lines.append(line)
        hit = _paf_hit(f) if fmt == "paf" else _sam_hit(f, ctg_len)
        if hit is not None:
            res.hits.append(hit)
    return [by_name[n] for n in order]


def _tags(fields: list[str]) -> dict:
    out = {}
    for t in fields:
        k, typ, v = t.split(":", 2)
        out[k] = int(v) if typ == "i" else float(v) if typ == "f" else v
    return out


def _paf_hit(f: list[str]) -> Alignment:
    tags = _tags(f[12:])
    return Alignment(ctg=f[5], ctg_len=int(f[6]), r_st=int(f[7]), r_en=int(f[8]), strand=1 if f[4] == "+" else -1,
                     q_st=int(f[2]), q_en=int(f[3]), mapq=int(f[11]), cigar_str=tags.get("cg", ""),
                     is_primary=tags.get("tp") == "P", mlen=int(f[9]), blen=int(f[10]), NM=tags.get("NM", 0), tags=tags)


def _sam_hit(f: list[str], ctg_len: dict) -> Alignment | None:
    flag = int(f[1])
    if flag & 4:
        return None
    ops = [(int(n), op) for n, op in _CIGAR.findall(f[5])]
    ref_len = sum(n for n, op in ops if op in "MDN=X")
    clip_l = ops[0][0] if ops and ops[0][1] in "SH" else 0
    clip_r = ops[-1][0] if len(ops) > 1 and ops[-1][1] in "SH" else 0
    qlen = sum(n for n, op in ops if op in "MIS=XH")
    rev = bool(flag & 16)
    q_st, q_en = (clip_r, qlen - clip_l) if rev else (clip_l, qlen - clip_r)
    tags = _tags(f[11:])
    blen = sum(n for n, op in ops if op in "MID=X")
    return Alignment(ctg=f[2], ctg_len=ctg_len.get(f[2], 0), r_st=int(f[3]) - 1, r_en=int(f[3]) - 1 + ref_len,
                     strand=-1 if rev else 1, q_st=q_st, q_en=q_en, mapq=int(f[4]), cigar_str=f[5],
                     is_primary=not flag & 0x900, mlen=blen - tags.get("NM", 0) if "NM" in tags else 0,
                     blen=blen, NM=tags.get("NM", 0), tags=tags)
