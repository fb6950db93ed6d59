"""Seed dumps of the patched bwa and SAM of the stock bwa, made once per test session.

Shared by tests/bwa/test_seed_dump.py (oracle: SAM identity, -t invariance, CPU replay) and
tests/kernel/test_ksw_extend2.py (GPU replay). Both bwa binaries are built here through
scripts/upstream.py from the verified pybwa 2.3.2 sdist: `oracle bwa` (unpatched, upstream's
Makefile) and `patched-cli bwa` (the series of patches/upstream.toml). Each case runs the stock bwa
at -t2, the patched bwa with GPUEXT_BWA_DUMP at -t2 and at -t1; every binary runs as argv[0] "bwa"
so the @PG lines are comparable byte for byte.
"""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
ECOLI = ROOT / "data" / "ecoli" / "e_coli_k12.fa.gz"

# name: (real data set or None, simulator profile and arguments, bwa mem options)
CASES = {
    "celegans-se": ("celegans", None, []),
    "na18507-pe": ("na18507", None, []),
    "sim-illumina-pe": (None, ["--profile", "illumina-pairs", "-n", "1500"], []),
    "sim-pacbio": (None, ["--profile", "clr", "-n", "30", "--mean-len", "3000"], ["-x", "pacbio"]),
    "sim-ont2d": (None, ["--profile", "ont", "-n", "50", "--mean-len", "4000"], ["-x", "ont2d"]),
}
REAL = ("celegans-se", "na18507-pe")


@dataclass
class CaseRun:
    sam_oracle: Path
    sam_patched: Path
    dump_t1: Path
    dump_t2: Path


class BwaDumps:
    """Lazily built binaries, indexes, reads and per-case outputs under one folder."""

    def __init__(self, base: Path):
        self.base = base
        self._bins: tuple[Path, Path] | None = None
        self._index: dict[str, Path] = {}
        self._runs: dict[str, CaseRun] = {}

    def bins(self) -> tuple[Path, Path]:
        if self._bins is None:
            sys.path.insert(0, str(ROOT / "scripts"))
            import upstream

            self._bins = (upstream.build_oracle("bwa"), upstream.build_patched_cli("bwa"))
        return self._bins

    def _bwa(self, binary: Path, args: list[str], out: Path, threads: int, dump: Path | None) -> None:
        env = dict(os.environ)
        env.pop("GPUEXT_BWA_DUMP", None)
        if dump is not None:
            env["GPUEXT_BWA_DUMP"] = str(dump)
        with open(out, "wb") as f:
            r = subprocess.run(["bwa", "mem", "-t", str(threads), *args], executable=str(binary), stdout=f,
                               stderr=subprocess.PIPE, env=env, cwd=self.base)
        if r.returncode != 0:
            raise RuntimeError(f"{binary} mem {' '.join(args)} failed: {r.stderr.decode()[-2000:]}")

    def index(self, ref: Path) -> Path:
        key = str(ref)
        if key not in self._index:
            d = self.base / f"idx{len(self._index)}"
            d.mkdir(parents=True, exist_ok=True)
            prefix = d / "ref"
            r = subprocess.run([str(self.bins()[0]), "index", "-p", str(prefix), str(ref)], capture_output=True)
            if r.returncode != 0:
                raise RuntimeError(f"bwa index {ref} failed: {r.stderr.decode()[-2000:]}")
            self._index[key] = prefix
        return self._index[key]

    def inputs(self, case: str) -> tuple[Path, list[Path]]:
        real, sim, _ = CASES[case]
        if real:
            r = subprocess.run([sys.executable, str(ROOT / "scripts" / "fetch_data.py"), "get", real],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise FileNotFoundError(f"fetch_data.py get {real}: {r.stderr.strip()[-500:]}")
            ref, *reads = r.stdout.strip().split("\n")[-1].split("\t")[1:]
            return Path(ref), [Path(x) for x in reads]
        outs = [self.base / f"{case}_1.fq"]
        cmd = [sys.executable, str(ROOT / "scripts" / "simulate_reads.py"), *sim, "--seed", "7", str(ECOLI),
               "-o", str(outs[0])]
        if "illumina-pairs" in sim:
            outs.append(self.base / f"{case}_2.fq")
            cmd += ["--out2", str(outs[1])]
        if not outs[0].exists():
            subprocess.run(cmd, check=True, capture_output=True)
        return ECOLI, outs

    def run(self, case: str) -> CaseRun:
        if case not in self._runs:
            oracle, patched = self.bins()
            ref, reads = self.inputs(case)
            args = [*CASES[case][2], str(self.index(ref)), *map(str, reads)]
            r = CaseRun(*(self.base / f"{case}.{x}" for x in ("oracle.sam", "patched.sam", "t1.dump", "t2.dump")))
            self._bwa(oracle, args, r.sam_oracle, 2, None)
            self._bwa(patched, args, r.sam_patched, 2, r.dump_t2)
            self._bwa(patched, args, self.base / f"{case}.t1.sam", 1, r.dump_t1)
            self._runs[case] = r
        return self._runs[case]


_session: dict[str, BwaDumps] = {}


def bwa_dumps(tmp_path_factory) -> BwaDumps:
    """The session's BwaDumps (one per pytest run, whichever test module asks first)."""
    if "x" not in _session:
        base = tmp_path_factory.mktemp("bwa-dumps")
        _session["x"] = BwaDumps(base)
    return _session["x"]


def have_real(case: str) -> bool:
    return CASES[case][0] is not None


__all__ = ["BwaDumps", "CASES", "REAL", "bwa_dumps", "CaseRun"]
