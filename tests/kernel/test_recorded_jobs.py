"""The cuda backend on job sets recorded while mapping real and simulated reads: zero differences
from the stock ksw2 code on every field and every CIGAR (the fuzz tests cover the corners; these
cover what minimap2 really asks for)."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

pytestmark = [pytest.mark.gpu, pytest.mark.realdata]

SETS = [("lambda", "map-pb"), ("ecoli-ont", "map-ont"), ("sim-hifi", "map-hifi"), ("sim-ont", "asm20"),
        ("sim-illumina-pairs", "sr")]


@pytest.mark.parametrize("name,preset", SETS)
def test_recorded_jobs_identical(name, preset, datasets, tmp_path):
    from gpuext.backends import cpu
    from gpuext.backends.cuda import ksw_extd2
    from gpuext.engine.jobs import JobBatch, Scoring

    npz = tmp_path / "jobs.npz"
    r = subprocess.run([sys.executable, "-m", "gpuext", "map", "--quiet", "--backend", "cpu", "--rounds", "3",
                        "--dump-jobs", str(npz), "-cx", preset, "-t4", *datasets(name)], capture_output=True)
    assert r.returncode == 0, r.stderr.decode()[-500:]
    z = np.load(npz)
    batch = JobBatch(Scoring(z["mat"], int(z["q"]), int(z["e"]), int(z["q2"]), int(z["e2"])), z["qseq"], z["qoff"],
                     z["tseq"], z["toff"], z["kernel"], z["w"], z["zdrop"], z["end_bonus"], z["flag"])
    taken = np.flatnonzero(ksw_extd2.supports(batch) == 0)
    assert len(taken) == batch.n          # every recorded extd2 job fits the GPU
    got = ksw_extd2.run(batch, taken)
    want = cpu.run(batch.subset(taken), 4)
    diffs = got.diff(want)
    assert diffs == [], f"{len(diffs)} differences, first: {diffs[:5]}"
