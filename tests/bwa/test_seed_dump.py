"""The patched bwa's seed dump against the stock bwa 0.7.18 (the oracle, built from the same sdist).

For bwa mem on the real Illumina sets (celegans single-end, na18507 pairs) and on simulated E. coli
reads (Illumina pairs, `-x pacbio` CLR-like, `-x ont2d` ONT-like): the patched bwa with
GPUEXT_BWA_DUMP set writes byte-identical SAM to the stock bwa, its dump is identical at -t1 and
-t2, and BWA's own ksw_extend2 (gpuext._native.bwa) replays every dumped job with zero mismatches.
"""
from __future__ import annotations

import numpy as np
import pytest

from gpuext.bwa.dump import DumpError, read_dump, write_dump

from .dumps import CASES, REAL, bwa_dumps

pytestmark = pytest.mark.oracle

PARAMS = [pytest.param(c, marks=pytest.mark.realdata) if c in REAL else c for c in CASES]


@pytest.fixture(scope="session")
def dumps(tmp_path_factory):
    return bwa_dumps(tmp_path_factory)


def _run(dumps, case):
    try:
        return dumps.run(case)
    except FileNotFoundError as e:
        pytest.skip(f"data set unavailable: {e}")


@pytest.mark.parametrize("case", PARAMS)
def test_sam_identical_and_dump_same_for_any_t(dumps, case):
    r = _run(dumps, case)
    sam = r.sam_patched.read_bytes()
    assert sam == r.sam_oracle.read_bytes(), f"{case}: patched bwa SAM differs from stock bwa 0.7.18"
    assert b"\n@PG\tID:bwa" in sam and sam.count(b"\n") > 20
    assert r.dump_t1.read_bytes() == r.dump_t2.read_bytes(), f"{case}: dump differs between -t1 and -t2"


@pytest.mark.parametrize("case", PARAMS)
def test_cpu_replay_has_no_mismatch(dumps, case):
    from gpuext._native import bwa

    head, jobs, want = read_dump(_run(dumps, case).dump_t1)
    assert head["bwa"] == "bwa-0.7.18" and head["m"] == 5
    assert jobs.n > 0
    assert np.all(np.diff(jobs.read_id) >= 0), "records are not in read order"
    got = bwa.extend2(jobs, n_threads=2)
    bad = want.mismatches(got)
    assert len(bad) == 0, f"{case}: {len(bad)} of {jobs.n} jobs differ, first {want.row(bad[0])} vs {got.row(bad[0])}"


def test_replay_cli_and_dump_format(dumps, tmp_path, capsys):
    from gpuext.cli import bwa_replay

    path = _run(dumps, "sim-illumina-pe").dump_t1
    head, jobs, want = read_dump(path)
    # the reader and the writer agree byte for byte
    again = tmp_path / "again.dump"
    write_dump(again, jobs, want, head)
    assert again.read_bytes() == path.read_bytes()
    # read into the caller's memory (bwa-replay --backend cuda: page-locked): the same jobs, in it
    made = []

    def alloc(n, dtype):
        made.append(np.zeros(n, dtype))
        return made[-1]

    _, jobs_a, want_a = read_dump(path, alloc)
    for k in ("qseq", "tseq", "qoff", "toff", "h0", "w", "end_bonus", "zdrop", "o_del", "e_del", "o_ins",
              "e_ins", "mat_id"):
        assert np.array_equal(getattr(jobs_a, k), getattr(jobs, k)), k
        assert any(getattr(jobs_a, k) is a for a in made), k
    assert len(want.mismatches(want_a)) == 0
    assert bwa_replay.main([str(path), "--backend", "cpu", "-t", "2"]) == 0
    err = capsys.readouterr().err
    assert "[M::bwa_replay::" in err and f"{jobs.n} jobs" in err and "G cells/s" in err
    # one changed output is caught and reported
    want.gscore[jobs.n // 2] += 1
    bad = tmp_path / "bad.dump"
    write_dump(bad, jobs, want, head)
    assert bwa_replay.main([str(bad), "--backend", "cpu", "-t", "1"]) == 1
    assert f"job {jobs.n // 2}:" in capsys.readouterr().err
    # truncated and foreign files are refused
    (tmp_path / "cut.dump").write_bytes(path.read_bytes()[:-3])
    with pytest.raises(DumpError):
        read_dump(tmp_path / "cut.dump")
    assert bwa_replay.main([str(tmp_path / "cut.dump"), "--backend", "cpu"]) == 2
    (tmp_path / "x.dump").write_bytes(b"not a dump" * 20)
    assert bwa_replay.main([str(tmp_path / "x.dump"), "--backend", "cpu"]) == 2
