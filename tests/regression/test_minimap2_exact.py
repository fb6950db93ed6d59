"""gpuext map against stock minimap2 2.31, byte for byte: the oracle table.

Each row is (data set, minimap2 arguments); both tools run on the same inputs and every header line
(apart from gpuext's own @PG) and every record must be identical. Divergent rows would be strict
xfails with a reason, never removed. ROWS run in CI; SLOW_ROWS run on demand
(scripts/regression.sh sets GPUEXT_SLOW=1). $GPUEXT_TEST_BACKEND picks gpuext's backend (default
auto), so the same table checks the cuda backend on a GPU machine.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gpuext.io.compare import compare_texts

pytestmark = [pytest.mark.oracle, pytest.mark.realdata]

SAM_FULL = ["-a", "--MD", "--cs", "-Y", "-L"]
PAF_CS = ["-c", "--cs"]

ROWS = [
    # real data
    ("lambda", ["-x", "map-pb", "-a", "-t1"]),
    ("lambda", ["-x", "map-pb", *PAF_CS, "-t2"]),
    ("lambda", ["-x", "lr:hq", *SAM_FULL, "-t2"]),
    ("ecoli-ont", ["-x", "map-ont", "-a", "-t2"]),
    ("ecoli-ont", ["-x", "map-ont", *SAM_FULL, "-t1", "-K", "3M"]),
    ("ecoli-ont", ["-x", "map-ont", *PAF_CS, "-t2", "-K", "500k"]),
    ("ecoli-ont", ["-x", "asm20", "-a", "-t2"]),
    ("qcat-ont", ["-x", "map-ont", "-a", "--eqx", "-t2", "--secondary=no"]),
    ("sirv", ["-x", "splice", "-a", "-t2"]),
    ("sirv", ["-x", "splice", *PAF_CS, "-t1", "-K", "1M"]),
    ("celegans", ["-x", "sr", *SAM_FULL, "-t2"]),
    ("na18507", ["-x", "sr", "-a", "-t2"]),                    # paired: two files
    ("na18507", ["-x", "sr", "-a", "-t1", "-K", "20k"]),
    # simulated (structural variants, chimeras, inversions; seeded)
    ("sim-ont", ["-x", "map-ont", *SAM_FULL, "-t2"]),
    ("sim-ont", ["-x", "map-ont", "-a", "-t1", "-K", "200k", "-N", "3", "-p", "0.5"]),
    ("sim-ont", ["-x", "map-ont", "-a", "-O", "4", "-E", "2", "-t2"]),   # one gap cost: ksw_extz2
    ("sim-ont", ["-x", "map-iclr", "-a", "-t2"]),                      # transitions: GENERIC_SC
    ("sim-hifi", ["-x", "map-hifi", *SAM_FULL, "-t2"]),
    ("sim-hifi", ["-x", "lr:hq", *PAF_CS, "-t2"]),
    ("sim-hifi", ["-x", "asm5", "-a", "-t2"]),
    ("sim-clr", ["-x", "map-pb", "-a", "-t2", "--seed", "11"]),
    ("sim-illumina-pairs", ["-x", "sr", "-a", "-t2"]),
    ("sim-illumina-pairs", ["-x", "sr", *PAF_CS, "-t2", "-K", "100k"]),
]


SLOW_ROWS = [
    ("ecoli-ont", ["-x", "map-ont", "-a", "-t1"]),
    ("ecoli-ont", ["-x", "map-ont", *SAM_FULL, "-t2", "-K", "100k"]),
    ("ecoli-ont", ["-x", "lr:hq", *PAF_CS, "-t2"]),
    ("ecoli-ont", ["-x", "asm5", *PAF_CS, "-t2"]),
    ("qcat-ont", ["-x", "map-ont", *SAM_FULL, "-t2", "-K", "1M"]),
    ("sirv", ["-x", "splice", *SAM_FULL, "-t2", "-K", "200k"]),
    ("sirv", ["-x", "splice:hq", "-a", "-t2"]),
    ("celegans", ["-x", "sr", *PAF_CS, "-t1", "-K", "30k"]),
    ("na18507", ["-x", "sr", *SAM_FULL, "-t2"]),
    ("sim-ont", ["-x", "asm20", *SAM_FULL, "-t2"]),
    ("sim-hifi", ["-x", "map-hifi", "-a", "-t1", "-K", "500k"]),
    ("sim-clr", ["-x", "map-pb", *PAF_CS, "-t2", "-K", "300k"]),
]


def _id(row):
    name, args = row
    return name + ":" + "".join(a.lstrip("-") for a in args)


@pytest.mark.parametrize("row", ROWS + [pytest.param(r, marks=pytest.mark.slow) for r in SLOW_ROWS], ids=_id)
def test_identical_to_stock(row, oracle, datasets):
    name, args = row
    files = datasets(name)
    stock = subprocess.run([str(oracle), *args, *files], capture_output=True)
    assert stock.returncode == 0, stock.stderr.decode()[-500:]
    backend = os.environ.get("GPUEXT_TEST_BACKEND", "auto")
    ours = subprocess.run([sys.executable, "-m", "gpuext", "map", "--backend", backend, *args, *files],
                          capture_output=True)
    assert ours.returncode == 0, ours.stderr.decode()[-500:]
    rep = compare_texts(stock.stdout, ours.stdout)
    assert rep.identical, rep.summary()
    assert rep.records_same > 0
