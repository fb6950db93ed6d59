"""The batch engine: map a batch of reads in rounds so that its extension jobs are computed together.

For each batch (mm_map_file_frag's step 1, via the patched mm_map_batch_hook), `BatchEngine`:
  round 0..R-1  minimap2 maps every read; jobs it asks for that are not known yet are recorded
                (gx_engine.c answers them with a neutral result), then computed by the backend
                in one JobBatch and stored; a round with no unknown job gives the final hits;
  round R       (the round limit) unknown jobs are computed inline by the stock ksw2 code.
Rounds and backend calls are separate steps of minimap2's pipeline (see BatchEngine), so the CPU
maps one batch while the backend computes the jobs of the previous one.
Second passes are predicted: after a backend call, minimap2's own mm_test_zdrop is applied to each
computed first-pass gap fill, and the second pass it calls for is computed in the same step. Jobs
found only after an earlier result otherwise (regions split off by a Z-drop, inversions) appear in
round 1 and later. Results are looked up by all of a job's inputs and
checked byte for byte against the actual call, so a wrong plan can only cost time.

Neighbours: gpuext/_native (map_round, engine_pending, engine_import), gpuext/backends (compute),
gpuext/engine/verify.py (--verify), gpuext/cli/map.py (installs the engine).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import numpy as np

from .. import log, timeline
from . import pipeline_steps
from .jobs import JobBatch, Scoring
from .verify import Verifier


@dataclass
class Stats:
    """Counters of a whole run (written by --stats as JSON)."""

    backend: str = ""
    reads: int = 0
    bases: int = 0
    done_reads: int = 0                                 # reads whose mapping has finished
    done_bases: int = 0
    batches: int = 0
    rounds: list = field(default_factory=list)          # per round index: jobs, cells, served
    backend_jobs: int = 0
    backend_cells: int = 0
    cpu_fallback: dict = field(default_factory=dict)    # reason -> [jobs, cells]
    predicted_jobs: int = 0                             # second passes computed before minimap2 asked
    inline_jobs: int = 0                                # computed inline, outside any round
    inline_cells: int = 0
    verified_jobs: int = 0
    hash_collisions: int = 0
    time: dict = field(default_factory=lambda: {"map_rounds": 0.0, "backend": 0.0, "verify": 0.0, "job_table": 0.0})

    def add_round(self, r: int, jobs: int, cells: int) -> None:
        while len(self.rounds) <= r:
            self.rounds.append({"jobs": 0, "cells": 0})
        self.rounds[r]["jobs"] += jobs
        self.rounds[r]["cells"] += cells

    def add_fallback(self, reason: str, jobs: int, cells: int, inline: bool = False) -> None:
        if inline:
            self.inline_jobs += jobs
            self.inline_cells += cells
        if jobs:
            j, c = self.cpu_fallback.get(reason, [0, 0])
            self.cpu_fallback[reason] = [j + jobs, c + cells]

    def as_dict(self) -> dict:
        batched = sum(r["cells"] for r in self.rounds)
        total_cells = batched + self.inline_cells
        return {
            "backend": self.backend, "reads": self.reads, "bases": self.bases, "batches": self.batches,
            "jobs": sum(r["jobs"] for r in self.rounds) + self.inline_jobs,
            "dp_cells": total_cells,
            "rounds": self.rounds,
            "first_round_cell_share": (self.rounds[0]["cells"] / total_cells) if self.rounds and total_cells else None,
            "batched_cells": batched,
            "predicted_second_passes": self.predicted_jobs,
            "backend_jobs": self.backend_jobs, "backend_cells": self.backend_cells,
            "cpu_fallback": self.cpu_fallback,
            "verified_jobs": self.verified_jobs, "hash_collisions": self.hash_collisions,
            "time_s": {k: round(v, 3) for k, v in self.time.items()},
        }

    def summary(self) -> str:
        d = self.as_dict()
        share = d["first_round_cell_share"]
        fb = ", ".join(f"{k}: {j} jobs/{c / 1e6:.1f} M cells" for k, (j, c) in self.cpu_fallback.items()) or "none"
        return (f"{d['reads']} reads, {d['jobs']} extension jobs, {d['dp_cells'] / 1e9:.3f} G DP cells "
                f"({'%.1f%%' % (100 * share) if share is not None else 'n/a'} in round 1); "
                f"backend {self.backend}: {self.backend_jobs} jobs in {self.time['backend']:.2f} s; "
                f"CPU fallback: {fb}")


class BatchEngine:
    """The driver installed with gpuext._native.minimap2.install_engine.

    A batch of reads goes through 2R+1 steps of minimap2's pipeline: for r < R, step 2r is recording
    round r (CPU) and step 2r+1 computes its jobs (backend); step 2R is the final round. Each step
    runs in input order and concurrently with the other steps on other batches, so the backend of one
    batch works while the CPU maps the next. A batch whose round left nothing unknown is done: its
    later steps pass it through.
    """

    def __init__(self, backend, max_rounds: int = 1, verify_fraction: float = 0.0, seed: int = 11,
                 keep_jobs: bool = False):
        self.backend = backend
        self.max_rounds = max_rounds
        self.verifier = Verifier(verify_fraction, seed) if verify_fraction > 0 else None
        self.kept: list[JobBatch] | None = [] if keep_jobs else None
        self.stats = Stats(backend=backend.name)
        self._batches: dict[int, dict] = {}    # batch pointer -> {"table", "ptr", "done", "bases", "no"}
        self.lock = threading.Lock()            # stats and the batch map (steps run on several threads)

    @property
    def n_steps(self) -> int:
        return pipeline_steps(self.max_rounds)

    def __call__(self, n_threads: int, batch_ptr: int, n_reads: int, n_bases: int, step: int) -> None:
        from .._native import minimap2 as native

        with self.lock:
            if step == 0:
                self.stats.batches += 1
                self.stats.reads += n_reads
                self.stats.bases += n_bases
                self._batches[batch_ptr] = {"table": native.JobTable(), "ptr": batch_ptr, "done": False,
                                            "bases": n_bases, "no": self.stats.batches}
            b = self._batches[batch_ptr]
        final = step == self.n_steps - 1
        if not b["done"]:
            t_step = timeline.now()
            if step % 2 == 0:
                self._round(native, b, n_threads, step // 2, final)
            else:
                self._compute(b, step // 2, n_threads)
            timeline.span(f"batch {b['no']} step {step} ({n_reads} reads)", t_step)
        if final:
            with self.lock:
                del self._batches[batch_ptr]
                self.stats.done_reads += n_reads
                self.stats.done_bases += b["bases"]

    def _round(self, native, b: dict, n_threads: int, r: int, final: bool) -> None:
        t0 = time.perf_counter()
        rs = b["table"].map_round(n_threads, b["ptr"], native.MODE_FINAL if final else native.MODE_RECORD)
        with self.lock:
            st = self.stats
            st.time["map_rounds"] += time.perf_counter() - t0
            st.hash_collisions += rs["collisions"]
            st.add_fallback("splice (ksw_exts2 runs on the CPU)", rs["inline_splice_jobs"],
                            rs["inline_splice_cells"], inline=True)
            if final:
                st.add_fallback("round limit", rs["inline_final_jobs"], rs["inline_final_cells"], inline=True)
            else:
                st.add_round(r, rs["new_jobs"], rs["new_cells"])
        if final or rs["misses"] == 0:
            b["done"] = True

    def _compute(self, b: dict, r: int, n_threads: int) -> None:
        """Compute the pending jobs of a batch, then the second passes their results call for."""
        table = b["table"]
        while True:
            t_table = time.perf_counter()
            ids, arrays, (mat, q, e, q2, e2) = table.pending(getattr(self.backend, "host_alloc", None))
            if len(ids) == 0:
                return
            batch = JobBatch(Scoring(mat, q, e, q2, e2), **arrays)
            t0 = time.perf_counter()
            res, fallback = self.backend.run(batch)
            t1 = time.perf_counter()
            if self.verifier is not None:
                n_verified = self.verifier.check(batch, res, b["no"])
            t2 = time.perf_counter()
            cells = batch.cells()
            table.store(np.ascontiguousarray(ids), res)
            n_pred, pred_cells = table.predict(n_threads)
            t3 = time.perf_counter()
            if timeline.on:
                w = timeline.now() - t3   # (perf_counter stamps on the wall clock)
                timeline.span("  export jobs", w + t_table, w + t0)
                timeline.span("  store results, predict", w + t2, w + t3)
            with self.lock:
                st = self.stats
                st.time["backend"] += t1 - t0
                st.time["job_table"] += (t0 - t_table) + (t3 - t2)   # export, store, second-pass prediction
                if self.verifier is not None:
                    st.verified_jobs += n_verified
                    st.time["verify"] += t2 - t1
                for reason, (j, c) in fallback.items():
                    st.add_fallback(reason, j, c)
                st.backend_jobs += batch.n - sum(j for j, _ in fallback.values())
                st.backend_cells += int(cells.sum()) - sum(c for _, c in fallback.values())
                st.add_round(r, n_pred, pred_cells)
                st.predicted_jobs += n_pred
                if self.kept is not None:
                    self.kept.append(batch)
            if n_pred == 0:
                return


def report(stats: Stats) -> None:
    log.info("gpuext::map", stats.summary())
