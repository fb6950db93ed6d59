"""`gpuext compare A B`: are two SAM/BAM (or PAF) files the same, record by record?

Exit 0 when identical (apart from what is ignored); 1 with a summary (how many records differ, in
which fields) and the first differences; 2 on bad input. Neighbours: gpuext/io/compare.py.
"""
from __future__ import annotations

import argparse
import os
import sys

from .. import log


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="gpuext compare", description=__doc__.splitlines()[0])
    ap.add_argument("a", help="SAM, BAM or PAF file")
    ap.add_argument("b", help="SAM, BAM or PAF file")
    ap.add_argument("--ignore-pg", action="store_true", help="ignore every @PG header line")
    ap.add_argument("--ignore-tags", default="", metavar="XX,YY", help="tags left out of the comparison")
    ap.add_argument("--show", type=int, default=5, metavar="N", help="differences to print [5]")
    return ap


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    for path in (args.a, args.b):
        if not os.path.isfile(path):
            log.error("gpuext::compare", f"cannot read '{path}'")
            return 2
    from ..io.compare import compare_files

    tags = tuple(t for t in args.ignore_tags.split(",") if t)
    try:
        rep = compare_files(args.a, args.b, args.show, "all" if args.ignore_pg else "none", tags)
    except (OSError, ValueError, RuntimeError) as e:
        log.error("gpuext::compare", f"{e}")
        return 2
    print(rep.summary(), file=sys.stdout if rep.identical else sys.stderr)
    return 0 if rep.identical else 1
