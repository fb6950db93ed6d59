"""BAM output through pysam: minimap2's SAM text converted (or coordinate-sorted and indexed).

Neighbours: gpuext/cli/map.py writes minimap2's SAM to a temporary file and calls write_bam; the
result appears under its final name only when complete (temporary name, then rename).
"""
from __future__ import annotations

import os


def require_pysam():
    """pysam, or a clear error saying how to get it."""
    try:
        import pysam
    except ImportError:
        raise RuntimeError("BAM output needs pysam: pip install 'gpuext[bam]'") from None
    return pysam


def write_bam(sam_path: str, out_path: str, sort: bool = False, threads: int = 1, mem_per_thread: str = "768M") -> None:
    """Write sam_path as BAM to out_path; with sort, coordinate-sorted (samtools sort, bounded memory:
    mem_per_thread per thread, spilling to temporary files) and indexed (out_path + '.bai')."""
    pysam = require_pysam()
    d = os.path.dirname(os.path.abspath(out_path))
    tmp = os.path.join(d, f".{os.path.basename(out_path)}.gpuext-{os.getpid()}.tmp.bam")
    try:
        if sort:
            pysam.sort("-@", str(max(1, threads)), "-m", mem_per_thread, "-T", tmp + ".part", "-o", tmp, sam_path)
        else:
            pysam.view("-b", "-@", str(max(1, threads)), "-o", tmp, sam_path, catch_stdout=False)
        if sort:
            pysam.index(tmp, tmp + ".bai")
            os.replace(tmp + ".bai", out_path + ".bai")
        os.replace(tmp, out_path)
    finally:
        for p in (tmp, tmp + ".bai"):
            if os.path.exists(p):
                os.unlink(p)


def is_gzip(path: str) -> bool:
    """Whether a file starts with gzip's magic bytes (BGZF-compressed BAM, .gz FASTA/FASTQ)."""
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def read_sam_text(path: str) -> bytes:
    """The SAM text of a SAM or BAM file (header included), via pysam for BAM."""
    if not is_gzip(path):
        with open(path, "rb") as f:
            return f.read()
    pysam = require_pysam()
    with pysam.AlignmentFile(path, "rb", check_sq=False) as f:
        lines = [str(f.header).rstrip("\n")] if str(f.header) else []
        lines += [rec.to_string() for rec in f]
    return ("\n".join(lines) + "\n").encode()
