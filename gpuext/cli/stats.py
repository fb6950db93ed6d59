"""`gpuext stats FILE.bam|FILE.sam [--plot FILE.png]`: what a mapping run produced.

Counts of records (mapped, unmapped, secondary, supplementary), and for primary mapped records the
distributions of read length and identity (1 - NM / aligned columns), as percentiles; --plot draws
both histograms with matplotlib. Neighbours: gpuext/io/bam.py (reads SAM or BAM through pysam).
"""
from __future__ import annotations

import argparse
import os

import numpy as np

from .. import log


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="gpuext stats", description=__doc__.splitlines()[0])
    ap.add_argument("path", help="SAM or BAM file")
    ap.add_argument("--plot", metavar="PNG", help="write read-length and identity histograms")
    return ap


def collect(path: str) -> dict:
    from ..io.bam import is_gzip, require_pysam

    pysam = require_pysam()
    counts = dict(records=0, mapped=0, unmapped=0, primary=0, secondary=0, supplementary=0)
    lengths, identity = [], []
    with pysam.AlignmentFile(path, "rb" if is_gzip(path) else "r", check_sq=False) as f:
        for r in f:
            counts["records"] += 1
            if r.is_unmapped:
                counts["unmapped"] += 1
                lengths.append(r.query_length or len(r.query_sequence or ""))
                continue
            counts["mapped"] += 1
            if r.is_secondary:
                counts["secondary"] += 1
                continue
            if r.is_supplementary:
                counts["supplementary"] += 1
                continue
            counts["primary"] += 1
            lengths.append(r.infer_read_length() or r.query_length)
            cols = sum(n for op, n in (r.cigartuples or []) if op in (0, 1, 2, 7, 8))
            if cols and r.has_tag("NM"):
                identity.append(1.0 - r.get_tag("NM") / cols)
    return dict(counts=counts, read_length=np.array(lengths, float), identity=np.array(identity, float))


def _pct(x: np.ndarray) -> str:
    if len(x) == 0:
        return "n/a"
    p = np.percentile(x, [5, 25, 50, 75, 95])
    return "p5 {:.4g}, p25 {:.4g}, median {:.4g}, p75 {:.4g}, p95 {:.4g}, mean {:.4g}".format(*p, x.mean())


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    if not os.path.isfile(args.path):
        log.error("gpuext::stats", f"cannot read '{args.path}'")
        return 2
    try:
        s = collect(args.path)
    except (ValueError, OSError, RuntimeError) as e:
        log.error("gpuext::stats", f"cannot read '{args.path}' as SAM/BAM: {e}")
        return 2
    c = s["counts"]
    print(f"records\t{c['records']}\nmapped\t{c['mapped']}\nunmapped\t{c['unmapped']}\nprimary\t{c['primary']}\n"
          f"secondary\t{c['secondary']}\nsupplementary\t{c['supplementary']}\n"
          f"read_length\t{_pct(s['read_length'])}\nidentity\t{_pct(s['identity'])}")
    if args.plot:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            log.error("gpuext::stats", "--plot needs matplotlib: pip install 'gpuext[plot]'")
            return 2
        fig, ax = plt.subplots(1, 2, figsize=(10, 4))
        ax[0].hist(s["read_length"], bins=50, color="#4477aa")
        ax[0].set(title="read length (primary + unmapped)", xlabel="bases", ylabel="reads")
        ax[1].hist(s["identity"], bins=50, color="#228833")
        ax[1].set(title="identity of primary alignments", xlabel="1 - NM / aligned columns", ylabel="reads")
        fig.suptitle(os.path.basename(args.path))
        fig.tight_layout()
        from ..io.atomic import write_bytes
        import io

        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=100)
        write_bytes(args.plot, buf.getvalue())
    return 0
