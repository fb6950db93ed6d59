"""Read a BWA seed dump (docs/bwa-seed-dump.md) into flat arrays: ksw_extend2 jobs and BWA's results.

The patched bwa (patches/bwa-0.7.18-0001-*) writes one record per ksw_extend2 call of
mem_chain2aln when $GPUEXT_BWA_DUMP names a file. `read_dump` returns the header, an `ExtendJobs`
(the inputs, sequences concatenated with offsets like engine/jobs.py) and an `ExtendResults` (BWA's
outputs). Both backends (gpuext._native.bwa and backends/cuda/ksw_extend2.py) take an ExtendJobs
and return an ExtendResults, which `ExtendResults.mismatches` compares field by field.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

MAGIC = b"GXBWASD\0"
VERSION = 1
HEADER_FMT = "<8sII16si25s3x10i"          # magic, version, header bytes, bwa version, m, mat, options
HEADER_BYTES = struct.calcsize(HEADER_FMT)  # 104
RECORD_FIXED = 92
RECORD_DTYPE = np.dtype([
    ("rec_bytes", "<u4"), ("m", "<i4"), ("read_id", "<i8"), ("chain", "<i4"), ("seed", "<i4"),
    ("side", "i1"), ("try_", "i1"), ("pad", "<i2"),
    ("qlen", "<i4"), ("tlen", "<i4"), ("h0", "<i4"), ("w", "<i4"), ("end_bonus", "<i4"), ("zdrop", "<i4"),
    ("o_del", "<i4"), ("e_del", "<i4"), ("o_ins", "<i4"), ("e_ins", "<i4"),
    ("score", "<i4"), ("qle", "<i4"), ("tle", "<i4"), ("gtle", "<i4"), ("gscore", "<i4"), ("max_off", "<i4"),
])
assert RECORD_DTYPE.itemsize == RECORD_FIXED
RESULT_FIELDS = ("score", "qle", "tle", "gtle", "gscore", "max_off")
SCALAR_FIELDS = ("h0", "w", "end_bonus", "zdrop", "o_del", "e_del", "o_ins", "e_ins")


class DumpError(ValueError):
    """A file that is not a complete seed dump of a supported version."""


@dataclass
class ExtendJobs:
    """ksw_extend2 calls as flat arrays (all owned by the host; backends copy what they need).

    Job k: query qseq[qoff[k]:qoff[k+1]], target tseq[toff[k]:toff[k+1]] (codes 0..m-1, as passed),
    scalar inputs h0[k] ... e_ins[k], and the m x m matrix mats[mat_id[k]] (int8, row = target base).
    read_id/chain/seed/side/try_ say where BWA made the call (all -1 / 0 for synthetic jobs).
    """

    qseq: np.ndarray
    qoff: np.ndarray
    tseq: np.ndarray
    toff: np.ndarray
    h0: np.ndarray
    w: np.ndarray
    end_bonus: np.ndarray
    zdrop: np.ndarray
    o_del: np.ndarray
    e_del: np.ndarray
    o_ins: np.ndarray
    e_ins: np.ndarray
    mat_id: np.ndarray
    mats: list[np.ndarray]
    read_id: np.ndarray = field(default=None)  # type: ignore[assignment]
    chain: np.ndarray = field(default=None)    # type: ignore[assignment]
    seed: np.ndarray = field(default=None)     # type: ignore[assignment]
    side: np.ndarray = field(default=None)     # type: ignore[assignment]
    try_: np.ndarray = field(default=None)     # type: ignore[assignment]

    def __post_init__(self) -> None:
        n = len(self.qoff) - 1
        for name in SCALAR_FIELDS + ("mat_id",):
            setattr(self, name, np.ascontiguousarray(getattr(self, name), np.int32))
        self.qseq = np.ascontiguousarray(self.qseq, np.uint8)
        self.tseq = np.ascontiguousarray(self.tseq, np.uint8)
        self.qoff = np.ascontiguousarray(self.qoff, np.int64)
        self.toff = np.ascontiguousarray(self.toff, np.int64)
        self.mats = [np.ascontiguousarray(x, np.int8).reshape(-1) for x in self.mats]
        for name, dt, fill in (("read_id", np.int64, -1), ("chain", np.int32, -1), ("seed", np.int32, -1),
                               ("side", np.int8, 0), ("try_", np.int8, 0)):
            v = getattr(self, name)
            setattr(self, name, np.full(n, fill, dt) if v is None else np.ascontiguousarray(v, dt))

    @property
    def n(self) -> int:
        return len(self.qoff) - 1

    def qlen(self) -> np.ndarray:
        return np.diff(self.qoff).astype(np.int32)

    def tlen(self) -> np.ndarray:
        return np.diff(self.toff).astype(np.int32)

    def m(self) -> np.ndarray:
        """Alphabet size per job (the side of its matrix)."""
        side = np.array([int(round(np.sqrt(len(x)))) for x in self.mats], np.int32)
        return side[self.mat_id]

    def take(self, idx) -> "ExtendJobs":
        """The jobs idx (in that order) as a new ExtendJobs."""
        idx = np.asarray(idx, np.int64)
        qs, qo = _gather(self.qseq, self.qoff, idx)
        ts, to = _gather(self.tseq, self.toff, idx)
        kw = {k: getattr(self, k)[idx] for k in SCALAR_FIELDS + ("mat_id", "read_id", "chain", "seed", "side", "try_")}
        return ExtendJobs(qseq=qs, qoff=qo, tseq=ts, toff=to, mats=self.mats, **kw)


@dataclass
class ExtendResults:
    """ksw_extend2's outputs per job: return value (score), *qle, *tle, *gtle, *gscore, *max_off."""

    score: np.ndarray
    qle: np.ndarray
    tle: np.ndarray
    gtle: np.ndarray
    gscore: np.ndarray
    max_off: np.ndarray

    def __post_init__(self) -> None:
        for k in RESULT_FIELDS:
            setattr(self, k, np.ascontiguousarray(getattr(self, k), np.int32))

    @classmethod
    def empty(cls, n: int) -> "ExtendResults":
        return cls(*(np.zeros(n, np.int32) for _ in RESULT_FIELDS))

    @property
    def n(self) -> int:
        return len(self.score)

    def take(self, idx) -> "ExtendResults":
        return ExtendResults(*(getattr(self, k)[idx] for k in RESULT_FIELDS))

    def mismatches(self, other: "ExtendResults") -> np.ndarray:
        """Indices of the jobs where any of the six outputs differs."""
        bad = np.zeros(self.n, bool)
        for k in RESULT_FIELDS:
            bad |= getattr(self, k) != getattr(other, k)
        return np.flatnonzero(bad)

    def row(self, k: int) -> dict:
        return {f: int(getattr(self, f)[k]) for f in RESULT_FIELDS}


def _gather(seq: np.ndarray, off: np.ndarray, idx: np.ndarray, alloc=None) -> tuple[np.ndarray, np.ndarray]:
    lens = (off[idx + 1] - off[idx]).astype(np.int64)
    out_off = np.zeros(len(idx) + 1, np.int64)
    np.cumsum(lens, out=out_off[1:])
    src = np.repeat(off[idx] - out_off[:-1], lens) + np.arange(out_off[-1], dtype=np.int64)
    if alloc is None:
        return seq[src], out_off
    out = alloc(len(src), seq.dtype)
    np.take(seq, src, out=out)
    return out, out_off


def _copy(a: np.ndarray, alloc) -> np.ndarray:
    out = alloc(len(a), a.dtype)
    out[:] = a
    return out


def read_header(buf: bytes | memoryview) -> dict:
    """The dump header as a dict (raises DumpError on a bad magic or version)."""
    if len(buf) < HEADER_BYTES:
        raise DumpError("shorter than a seed-dump header")
    magic, version, hbytes, bwa, m, mat, *opts = struct.unpack_from(HEADER_FMT, buf, 0)
    if magic != MAGIC:
        raise DumpError("not a gpuext BWA seed dump (bad magic)")
    if version != VERSION:
        raise DumpError(f"seed dump version {version}; this gpuext reads version {VERSION}")
    names = ("a", "b", "o_del", "e_del", "o_ins", "e_ins", "w", "zdrop", "pen_clip5", "pen_clip3")
    return {"version": version, "header_bytes": hbytes, "bwa": bwa.rstrip(b"\0").decode(), "m": m,
            "mat": np.frombuffer(mat, np.int8).copy(), **dict(zip(names, opts))}


def read_dump(path: str | Path, alloc=None) -> tuple[dict, ExtendJobs, ExtendResults]:
    """Parse a whole dump: (header, jobs, BWA's results). Raises DumpError on a truncated record.
    alloc(n, dtype), if given, makes the arrays the sequences, offsets and per-job inputs are read into
    (e.g. page-locked memory)."""
    buf = np.fromfile(path, np.uint8)
    head = read_header(memoryview(buf))
    pos, end = head["header_bytes"], len(buf)
    mv = memoryview(buf)
    offs = []
    unpack = struct.Struct("<I").unpack_from
    while pos < end:
        if pos + RECORD_FIXED > end:
            raise DumpError(f"truncated record at byte {pos}")
        offs.append(pos)
        pos += unpack(mv, pos)[0]
    if pos != end:
        raise DumpError(f"truncated record at byte {offs[-1]}")
    off = np.asarray(offs, np.int64)
    n = len(off)
    fixed = buf[off[:, None] + np.arange(RECORD_FIXED)].copy().view(RECORD_DTYPE).reshape(n)
    m = fixed["m"].astype(np.int64)
    qlen, tlen = fixed["qlen"].astype(np.int64), fixed["tlen"].astype(np.int64)
    if n and (np.any(fixed["rec_bytes"] != RECORD_FIXED + m * m + qlen + tlen) or np.any(qlen < 0) or np.any(tlen < 0)):
        raise DumpError("inconsistent record lengths")
    mat_start = off + RECORD_FIXED
    q_start = mat_start + m * m
    t_start = q_start + qlen
    qs, qo = _gather(buf, np.stack([q_start, q_start + qlen], 1).reshape(-1), np.arange(0, 2 * n, 2), alloc)
    ts, to = _gather(buf, np.stack([t_start, t_start + tlen], 1).reshape(-1), np.arange(0, 2 * n, 2), alloc)
    # unique scoring matrices (normally one)
    mats: list[np.ndarray] = []
    keys: dict[bytes, int] = {}
    mat_id = np.zeros(n, np.int32)
    if n:
        mm = m * m
        groups = {}
        for sz in np.unique(mm):
            sel = np.flatnonzero(mm == sz)
            rows = buf[mat_start[sel, None] + np.arange(sz)]
            uniq, inv = np.unique(rows, axis=0, return_inverse=True)
            for u, row in enumerate(uniq):
                key = row.tobytes()
                if key not in keys:
                    keys[key] = len(mats)
                    mats.append(row.view(np.int8).copy())
                groups[(int(sz), u)] = keys[key]
            mat_id[sel] = [groups[(int(sz), int(u))] for u in np.asarray(inv).reshape(-1)]
    per_job = {k: fixed[k] for k in SCALAR_FIELDS + ("read_id", "chain", "seed", "side", "try_")}
    if alloc is not None:   # the arrays the backends send, in the caller's memory
        for k in SCALAR_FIELDS:
            per_job[k] = _copy(fixed[k], alloc)
        mat_id, qo, to = (_copy(x, alloc) for x in (mat_id, qo, to))
    jobs = ExtendJobs(qseq=qs, qoff=qo, tseq=ts, toff=to, mat_id=mat_id, mats=mats, **per_job)
    res = ExtendResults(*(fixed[k] for k in RESULT_FIELDS))
    return head, jobs, res


def write_dump(path: str | Path, jobs: ExtendJobs, res: ExtendResults, header: dict | None = None) -> None:
    """Write jobs and results as a dump (for tests and synthetic workloads); the header from `header`."""
    h = header or {}
    mat0 = jobs.mats[0] if jobs.mats else np.zeros(25, np.int8)
    opts = [int(h.get(k, 0)) for k in ("a", "b", "o_del", "e_del", "o_ins", "e_ins", "w", "zdrop", "pen_clip5", "pen_clip3")]
    with open(path, "wb") as f:
        f.write(struct.pack(HEADER_FMT, MAGIC, VERSION, HEADER_BYTES, h.get("bwa", "synthetic").encode(),
                            int(round(np.sqrt(len(mat0)))), np.asarray(h.get("mat", mat0), np.int8)[:25].tobytes()
                            .ljust(25, b"\0"), *opts))
        m = jobs.m()
        qlen, tlen = jobs.qlen(), jobs.tlen()
        rec = np.zeros(jobs.n, RECORD_DTYPE)
        rec["rec_bytes"] = RECORD_FIXED + m * m + qlen + tlen
        rec["m"] = m
        for k in SCALAR_FIELDS + ("read_id", "chain", "seed", "side", "try_"):
            rec[k] = getattr(jobs, k)
        rec["qlen"], rec["tlen"] = qlen, tlen
        for k in RESULT_FIELDS:
            rec[k] = getattr(res, k)
        for k in range(jobs.n):
            f.write(rec[k].tobytes())
            f.write(jobs.mats[jobs.mat_id[k]].tobytes())
            f.write(jobs.qseq[jobs.qoff[k]:jobs.qoff[k + 1]].tobytes())
            f.write(jobs.tseq[jobs.toff[k]:jobs.toff[k + 1]].tobytes())
