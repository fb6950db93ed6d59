"""`gpuext verify [options] -- MINIMAP2_ARGS`: run stock minimap2 2.31 and gpuext on the same inputs
and options, and compare their outputs record by record (the exactness regression as a user command).

The stock CLI is the unpatched minimap2 2.31 built from the same sdist: --oracle PATH, $GPUEXT_ORACLE,
or, from a gpuext checkout, built on demand by scripts/upstream.py. --sample N maps N reads drawn
at random (seeded; both mates of a pair) instead of all of them.
"""
from __future__ import annotations

import argparse
import gzip
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .. import log
from ..io.bam import is_gzip
from .map import UsageError, positionals, short_option, split_argv


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="gpuext verify", description=__doc__.splitlines()[0])
    ap.add_argument("--oracle", default=os.environ.get("GPUEXT_ORACLE"), help="stock minimap2 2.31 binary")
    ap.add_argument("--sample", type=int, default=0, metavar="N", help="map N random reads only")
    ap.add_argument("--seed", type=int, default=11, help="seed of --sample [11]")
    ap.add_argument("--show", type=int, default=5, metavar="N", help="differences to print [5]")
    ap.add_argument("rest", nargs=argparse.REMAINDER, help="[gpuext map options] -- minimap2 arguments")
    return ap


def find_oracle(given: str | None) -> str:
    if given:
        return given
    scripts = Path(__file__).resolve().parents[2] / "scripts" / "upstream.py"
    if scripts.is_file():
        r = subprocess.run([sys.executable, str(scripts), "oracle", "minimap2"], capture_output=True, text=True)
        if r.returncode == 0:
            return r.stdout.strip()
        raise RuntimeError(r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "building the oracle failed")
    raise RuntimeError("no stock minimap2: pass --oracle PATH or set GPUEXT_ORACLE")


def _records(path: str):
    op = gzip.open if is_gzip(path) else open
    with op(path, "rt") as f:
        head = f.read(1)
        f.seek(0)
        size = 4 if head == "@" else 2
        rec = []
        for line in f:
            if size == 2 and line.startswith(">") and rec:
                yield rec
                rec = []
            rec.append(line)
            if size == 4 and len(rec) == 4:
                yield rec
                rec = []
        if rec:
            yield rec


def sample_reads(files: list[str], n: int, seed: int, outdir: str) -> list[str]:
    """Write the same n random records (by index) of each query file; keep their order."""
    counts = sum(1 for _ in _records(files[0]))
    keep = set(random.Random(seed).sample(range(counts), min(n, counts)))
    out = []
    for k, path in enumerate(files):
        dest = os.path.join(outdir, f"sample{k}.fx")
        with open(dest, "w") as f:
            for i, rec in enumerate(_records(path)):
                if i in keep:
                    f.writelines(rec)
        out.append(dest)
    return out


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    if "--" in rest:
        k = rest.index("--")
        gx_opts, mm2 = rest[:k], rest[k + 1:]
    else:
        gx_opts, mm2 = [], rest
    if not mm2:
        log.error("gpuext::verify", "give minimap2's arguments after --")
        return 2
    try:
        opts = split_argv(gx_opts + mm2)
    except UsageError as e:
        log.error("gpuext::verify", str(e))
        return 2
    if short_option(opts.minimap2_argv, "o") is not None:
        log.error("gpuext::verify", "leave out -o: verify compares what both tools write to stdout")
        return 2
    pos = positionals(opts.minimap2_argv)
    if len(pos) < 2:
        log.error("gpuext::verify", "need a target and at least one query file")
        return 2
    try:
        oracle = find_oracle(args.oracle)
    except RuntimeError as e:
        log.error("gpuext::verify", str(e))
        return 2
    with tempfile.TemporaryDirectory(prefix="gpuext-verify-") as d:
        mm2_args = list(opts.minimap2_argv)
        if args.sample:
            sampled = sample_reads(pos[1:], args.sample, args.seed, d)
            idx = [i for i, a in enumerate(mm2_args) if a in pos[1:]]
            for i, new in zip(idx[-len(sampled):], sampled):
                mm2_args[i] = new
        t0 = time.perf_counter()
        a = subprocess.run([oracle, *mm2_args], capture_output=True)
        t1 = time.perf_counter()
        if a.returncode != 0:
            log.error("gpuext::verify", f"stock minimap2 failed: {a.stderr.decode().strip().splitlines()[-1:]}")
            return 2
        b = subprocess.run([sys.executable, "-m", "gpuext", "map", "--quiet", *gx_opts, *mm2_args], capture_output=True)
        t2 = time.perf_counter()
        if b.returncode != 0:
            log.error("gpuext::verify", f"gpuext map failed: {b.stderr.decode().strip().splitlines()[-1:]}")
            return 1
    from ..io.compare import compare_texts

    rep = compare_texts(a.stdout, b.stdout, args.show)
    log.info("gpuext::verify", f"{'identical' if rep.identical else 'DIFFERENT'} (stock {t1 - t0:.2f} s, "
                               f"gpuext {t2 - t1:.2f} s): {rep.summary()}")
    return 0 if rep.identical else 1
