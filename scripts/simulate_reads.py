#!/usr/bin/env python3
"""Seeded, deterministic read simulator for gpuext's tests and benchmarks (numpy only).

Profiles:
  ont             lognormal lengths (mean 8 kb), ~10% errors (8-12% per read): subs/ins/del with
                  extra indels in homopolymers
  hifi            ~15 kb (sd 1.5 kb), ~0.5% errors, mostly homopolymer indels
  clr             lognormal lengths (mean 10 kb), ~12% errors, insertion-heavy
  illumina-pairs  2 x 150 bp, FR, insert 400 +- 50, ~0.3% substitutions, a few N bases

Long-read profiles also make structural oddities that exercise Z-drop and split alignments:
chimeras (two distant pieces joined, each on its own strand), reads whose middle segment is
inverted, and reads with a long deletion or a long random insertion (see --chimera etc.).

Reads come from both strands. Names are unique and have no whitespace (sim_ont_000001); the
FASTQ comment holds the truth, e.g.
  @sim_ont_000007 kind=inversion len=8123 err=0.0934 truth=chr:1200-9400:+
truth lists the reference pieces in read order as ctg:start-end:strand, 0-based half-open.
For pairs, both files carry the same names in the same order and truth describes the fragment
(strand + means read 1 is on the forward strand).

Deterministic: read i of a long-read profile is drawn from numpy.random.default_rng([seed, i]),
pairs in batches from default_rng([seed, 2**32 + batch]); only uniform doubles are used (plus
libm's log/cos/exp for lengths), so the same seed gives the same bytes on any machine, and -n 100
gives the first 100 reads of -n 1000 (long-read profiles; not for pairs). Output ending in .gz
is gzip with mtime 0.

usage: simulate_reads.py --profile PROFILE -n N [--seed S] [-o OUT.fq[.gz]] [--out2 OUT2] REF.fa[.gz]
"""
from __future__ import annotations

import argparse
import gzip
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# -------------------------------------------------------------------------------------------
# sequence encoding: A C G T N -> 0 1 2 3 4
# -------------------------------------------------------------------------------------------

_ENC = np.full(256, 4, dtype=np.uint8)
for _i, _c in enumerate(b"ACGT"):
    _ENC[_c] = _i
    _ENC[_c + 32] = _i
_DEC = np.frombuffer(b"ACGTN", dtype=np.uint8)
_COMP = np.array([3, 2, 1, 0, 4], dtype=np.uint8)


def revcomp(codes: np.ndarray) -> np.ndarray:
    return _COMP[codes[::-1]]


@dataclass
class Reference:
    names: list[str]
    seqs: list[np.ndarray]            # codes per contig
    lengths: np.ndarray               # int64

    @classmethod
    def load(cls, path: Path) -> "Reference":
        opener = gzip.open if _is_gzip(path) else open
        names, chunks, seqs = [], [], []
        with opener(path, "rb") as f:
            for line in f:
                if line.startswith(b">"):
                    if names:
                        seqs.append(_ENC[np.frombuffer(b"".join(chunks), dtype=np.uint8)])
                    names.append(line[1:].split()[0].decode())
                    chunks = []
                else:
                    chunks.append(line.strip())
        if names:
            seqs.append(_ENC[np.frombuffer(b"".join(chunks), dtype=np.uint8)])
        if not names:
            raise SystemExit(f"[E::simulate_reads] {path}: no FASTA records")
        return cls(names, seqs, np.array([len(s) for s in seqs], dtype=np.int64))

    def pick(self, u: float, min_len: int) -> int:
        """A contig chosen with probability proportional to its length among those >= min_len
        (the longest one if none is long enough)."""
        ok = np.flatnonzero(self.lengths >= min_len)
        if ok.size == 0:
            return int(np.argmax(self.lengths))
        cum = np.cumsum(self.lengths[ok])
        return int(ok[np.searchsorted(cum, int(u * int(cum[-1])), side="right")])


def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


# -------------------------------------------------------------------------------------------
# profiles
# -------------------------------------------------------------------------------------------

@dataclass
class Profile:
    tag: str
    length: str               # "lognormal" or "normal"
    mean_len: float
    len_sigma: float          # lognormal sigma, or sd as a fraction of the mean for "normal"
    error: float              # mean error rate per base
    error_sd: float           # per-read spread, fraction of the mean
    split: tuple[float, float, float]   # fractions of sub, ins, del
    hp_boost: float           # indel rate multiplier inside homopolymer runs
    hp_ins: float             # chance an inserted base copies its neighbour (homopolymer extension)
    qual_ok: tuple[int, int]  # phred range of correct bases
    qual_err: tuple[int, int]  # phred range of erroneous bases
    chimera: float = 0.03
    inversion: float = 0.02
    long_del: float = 0.015
    long_ins: float = 0.015


PROFILES = {
    "ont": Profile("ont", "lognormal", 8000, 0.8, 0.10, 0.12, (0.40, 0.22, 0.38), 3.0, 0.6, (7, 22), (2, 8)),
    "hifi": Profile("hifi", "normal", 15000, 0.10, 0.005, 0.30, (0.20, 0.40, 0.40), 6.0, 0.8, (25, 93), (3, 20)),
    "clr": Profile("clr", "lognormal", 10000, 0.7, 0.12, 0.12, (0.15, 0.55, 0.30), 1.5, 0.4, (8, 16), (3, 9)),
}
ILLUMINA_TAG = "ilmn"


class Draw:
    """Uniform doubles from one generator, consumed in a fixed order."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng

    def u(self) -> float:
        return float(self.rng.random())

    def us(self, n: int) -> np.ndarray:
        return self.rng.random(n)

    def int(self, lo: int, hi: int) -> int:
        """Uniform integer in [lo, hi]."""
        return lo + min(int(self.u() * (hi - lo + 1)), hi - lo)

    def normal(self) -> float:
        u1, u2 = self.u(), self.u()
        return math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(2.0 * math.pi * u2)


# -------------------------------------------------------------------------------------------
# long reads
# -------------------------------------------------------------------------------------------

def _read_length(p: Profile, d: Draw, mean_len: float) -> int:
    z = d.normal()
    if p.length == "lognormal":
        mu = math.log(mean_len) - p.len_sigma ** 2 / 2
        n = math.exp(mu + p.len_sigma * z)
    else:
        n = mean_len * (1.0 + p.len_sigma * z)
    return int(min(max(n, 200.0), 20 * mean_len))


def _piece(ref: Reference, d: Draw, length: int, avoid: tuple[int, int] | None = None):
    """(contig, start, end, strand) of a random piece of about `length` bases; with avoid=(ctg, pos)
    the piece is put on another contig or far from pos when the genome allows."""
    for _ in range(32):
        c = ref.pick(d.u(), length)
        clen = int(ref.lengths[c])
        n = min(length, clen)
        start = d.int(0, clen - n)
        strand = "+" if d.u() < 0.5 else "-"
        if avoid is None or c != avoid[0]:
            return c, start, start + n, strand
        far = min(max(3 * length, 20000), clen // 3)
        if abs(start - avoid[1]) >= far:
            return c, start, start + n, strand
    return c, start, start + n, strand


def _seq(ref: Reference, c: int, start: int, end: int, strand: str) -> np.ndarray:
    s = ref.seqs[c][start:end]
    return revcomp(s) if strand == "-" else s.copy()


def _truth(ref: Reference, pieces) -> str:
    return ",".join(f"{ref.names[c]}:{s}-{e}:{st}" for c, s, e, st in pieces)


def _template(ref: Reference, p: Profile, d: Draw, length: int, fractions: dict) -> tuple[np.ndarray, str, str]:
    """The error-free read: (codes, kind, truth)."""
    u = d.u()
    kind = "normal"
    acc = 0.0
    for k in ("chimera", "inversion", "long_del", "long_ins"):
        acc += fractions[k]
        if u < acc:
            kind = k
            break
    if kind == "chimera":
        n1 = max(100, int(length * (0.25 + 0.5 * d.u())))
        n2 = max(100, length - n1)
        a = _piece(ref, d, n1)
        b = _piece(ref, d, n2, avoid=(a[0], a[1]))
        return np.concatenate([_seq(ref, *a), _seq(ref, *b)]), kind, _truth(ref, [a, b])
    if kind == "long_del":
        dl = d.int(500, max(500, min(5000, length // 2)))
        c, start, end, strand = _piece(ref, d, length + dl)
        if end - start < length + dl:      # contig too short: an ordinary read
            return _seq(ref, c, start, end, strand), "normal", _truth(ref, [(c, start, end, strand)])
        cut = start + d.int(length // 4, (3 * length) // 4)
        left, right = (c, start, cut, "+"), (c, cut + dl, end, "+")
        s = np.concatenate([_seq(ref, *left), _seq(ref, *right)])
        pieces = [left, right]
        if strand == "-":
            s = revcomp(s)
            pieces = [(c, right[1], right[2], "-"), (c, left[1], left[2], "-")]
        return s, kind, _truth(ref, pieces)
    c, start, end, strand = _piece(ref, d, length)
    s = _seq(ref, c, start, end, strand)
    n = len(s)
    if kind == "inversion" and n >= 600:
        il = d.int(max(150, n // 10), max(150, (3 * n) // 10))
        a = d.int(n // 5, max(n // 5, n - n // 5 - il))
        s[a:a + il] = revcomp(s[a:a + il])
        # pieces in read order
        if strand == "+":
            pieces = [(c, start, start + a, "+"), (c, start + a, start + a + il, "-"), (c, start + a + il, end, "+")]
        else:
            pieces = [(c, end - a, end, "-"), (c, end - a - il, end - a, "+"), (c, start, end - a - il, "-")]
        return s, kind, _truth(ref, pieces)
    if kind == "long_ins" and n >= 600:
        il = d.int(300, max(300, min(3000, n // 2)))
        a = d.int(n // 4, (3 * n) // 4)
        ins = np.minimum((d.us(il) * 4).astype(np.uint8), 3)
        s = np.concatenate([s[:a], ins, s[a:]])
        if strand == "+":
            pieces = [(c, start, start + a, "+"), (c, start + a, end, "+")]
        else:
            pieces = [(c, end - a, end, "-"), (c, start, end - a, "-")]
        return s, f"long_ins ins={a}+{il}", _truth(ref, pieces)
    return s, "normal", _truth(ref, [(c, start, end, strand)])


def _mutate(s: np.ndarray, p: Profile, d: Draw, rate: float) -> tuple[np.ndarray, np.ndarray]:
    """Apply subs/ins/del to codes s at the given overall rate; return (codes, is_error per base)."""
    n = len(s)
    fs, fi, fd = p.split
    # homopolymer runs: positions equal to a neighbour
    hp = np.zeros(n, dtype=bool)
    if n > 1:
        same = s[1:] == s[:-1]
        hp[1:] |= same
        hp[:-1] |= same
    f_hp = float(hp.mean()) if n else 0.0
    indel_scale = 1.0 / (1.0 - f_hp + f_hp * p.hp_boost)
    boost = np.where(hp, p.hp_boost * indel_scale, indel_scale)
    p_sub = rate * fs
    p_ins = rate * fi * boost
    p_del = rate * fd * boost
    u = d.us(n)
    sub = u < p_sub
    ins = (u >= p_sub) & (u < p_sub + p_ins)
    dele = (u >= p_sub + p_ins) & (u < p_sub + p_ins + p_del)
    v = d.us(n)
    out = s.copy()
    shift = 1 + np.minimum((v * 3).astype(np.uint8), 2)
    sub &= s < 4
    out[sub] = (s[sub] + shift[sub]) % 4
    w = d.us(n)
    ins_len = np.where(ins, 1 + (w < 0.3).astype(np.int64) + (w < 0.09) + (w < 0.027), 0)
    keep = (~dele).astype(np.int64)
    total = ins_len + keep
    m = int(total.sum())
    owner = np.repeat(np.arange(n), total)
    slot = np.arange(m) - np.repeat(np.cumsum(total) - total, total)
    kept_slot = slot == np.repeat(ins_len, total)           # the base itself comes after its insertions
    x = d.us(m)
    y = d.us(m)
    res = np.minimum((x * 4).astype(np.uint8), 3)
    copy = (y < p.hp_ins) & (s[owner] < 4)
    res[copy] = s[owner][copy]
    res[kept_slot] = out[owner[kept_slot]]
    err = ~kept_slot | sub[owner]
    return res, err


def _quals(p: Profile, d: Draw, codes: np.ndarray, err: np.ndarray) -> np.ndarray:
    n = len(codes)
    u = d.us(n)
    lo, hi = p.qual_ok
    q = lo + np.minimum((u * (hi - lo + 1)).astype(np.int64), hi - lo)
    lo, hi = p.qual_err
    qe = lo + np.minimum((u * (hi - lo + 1)).astype(np.int64), hi - lo)
    q = np.where(err, qe, q)
    q[codes == 4] = 2
    return (q + 33).astype(np.uint8)


def long_read(ref: Reference, p: Profile, seed: int, i: int, mean_len: float, error: float,
              fractions: dict, prefix: str) -> bytes:
    d = Draw(np.random.default_rng([seed, i]))
    length = _read_length(p, d, mean_len)
    rate = min(max(error * (1.0 + p.error_sd * d.normal()), error * 0.5), min(0.5, error * 1.5))
    tmpl, kind, truth = _template(ref, p, d, length, fractions)
    codes, err = _mutate(tmpl, p, d, rate)
    if len(codes) == 0:
        codes, err = np.array([4], dtype=np.uint8), np.array([True])
    q = _quals(p, d, codes, err)
    head = f"@{prefix}_{i + 1:06d} kind={kind} len={len(codes)} err={rate:.4f} truth={truth}\n"
    return head.encode() + _DEC[codes].tobytes() + b"\n+\n" + q.tobytes() + b"\n"


# -------------------------------------------------------------------------------------------
# Illumina pairs
# -------------------------------------------------------------------------------------------

PAIR_BATCH = 4096


def illumina_batch(ref: Reference, seed: int, batch: int, count: int, read_len: int, insert: float,
                   insert_sd: float, sub_rate: float, n_reads: float, prefix: str) -> tuple[bytes, bytes]:
    """`count` pairs, numbered from batch * PAIR_BATCH; vectorised over the batch."""
    d = Draw(np.random.default_rng([seed, (1 << 32) + batch]))
    L = read_len
    ok = np.flatnonzero(ref.lengths >= L)
    if ok.size == 0:
        raise SystemExit(f"[E::simulate_reads] no contig is as long as a read ({L} bp)")
    big = ok[ref.lengths[ok] >= insert + 4 * insert_sd]
    pool = big if big.size else ok
    # fragment lengths (Box-Muller through libm, one pair at a time), contigs, starts, strands
    u = d.us(2 * count)
    z = np.array([math.sqrt(-2.0 * math.log(1.0 - u[2 * j])) * math.cos(2.0 * math.pi * u[2 * j + 1])
                  for j in range(count)])
    frag = np.maximum(L, np.floor(insert + insert_sd * z + 0.5).astype(np.int64))
    cum = np.cumsum(ref.lengths[pool])
    pick = (d.us(count) * float(cum[-1])).astype(np.int64)
    ctg = pool[np.minimum(np.searchsorted(cum, pick, side="right"), pool.size - 1)]
    clen = ref.lengths[ctg]
    frag = np.minimum(frag, clen)
    start = np.minimum((d.us(count) * (clen - frag + 1)).astype(np.int64), clen - frag)
    plus = d.us(count) < 0.5
    offs = np.concatenate([[0], np.cumsum(ref.lengths)[:-1]])
    allseq = np.concatenate(ref.seqs)
    ar = np.arange(L)
    g0 = (offs[ctg] + start)[:, None]
    fwd = allseq[g0 + ar]                                       # count x L
    rev = _COMP[allseq[g0 + (frag - 1)[:, None] - ar]]
    pos_rate = sub_rate * (0.5 + ar / max(1, L - 1))            # rises along the read, mean sub_rate
    base_q = 40 - (ar * 12) // L                                # quality falls along the read
    mates = []
    for m in (np.where(plus[:, None], fwd, rev), np.where(plus[:, None], rev, fwd)):
        u, v, w = d.us(count * L).reshape(count, L), d.us(count * L).reshape(count, L), d.us(count * L).reshape(count, L)
        sub = (u < pos_rate) & (m < 4)
        m = np.where(sub, (m + 1 + np.minimum((v * 3).astype(np.uint8), 2)) % 4, m).astype(np.uint8)
        has_n = d.us(count) < n_reads                           # a few reads get 1-3 N calls
        n_n = 1 + np.minimum((d.us(count) * 3).astype(np.int64), 2)
        where_n = np.minimum((d.us(3 * count) * L).astype(np.int64), L - 1).reshape(count, 3)
        for k in range(3):
            rows = np.flatnonzero(has_n & (n_n > k))
            m[rows, where_n[rows, k]] = 4
        q = base_q - np.minimum((w * 8).astype(np.int64), 7)
        q = np.where(sub, 8 + np.minimum((w * 12).astype(np.int64), 11), q)
        q[m == 4] = 2
        mates.append((_DEC[m], (q + 33).astype(np.uint8)))
    outs = []
    for seqs, quals in mates:
        buf = []
        for j in range(count):
            c = int(ctg[j])
            buf.append(f"@{prefix}_{batch * PAIR_BATCH + j + 1:06d} truth={ref.names[c]}:{start[j]}-{start[j] + frag[j]}:"
                       f"{'+' if plus[j] else '-'} insert={frag[j]}\n".encode()
                       + seqs[j].tobytes() + b"\n+\n" + quals[j].tobytes() + b"\n")
        outs.append(b"".join(buf))
    return outs[0], outs[1]


# -------------------------------------------------------------------------------------------
# output
# -------------------------------------------------------------------------------------------

class Output:
    def __init__(self, path: str | None):
        self.raw = None
        if path in (None, "-"):
            self.f = sys.stdout.buffer
        elif path.endswith(".gz"):
            self.raw = open(path, "wb")
            self.f = gzip.GzipFile(filename="", mode="wb", fileobj=self.raw, compresslevel=6, mtime=0)
        else:
            self.f = open(path, "wb")

    def write(self, b: bytes) -> None:
        self.f.write(b)

    def close(self) -> None:
        if self.f is sys.stdout.buffer:
            self.f.flush()
            return
        self.f.close()
        if self.raw is not None:
            self.raw.close()


def simulate(ref: Reference, profile: str, n: int, seed: int, out1, out2=None, *, mean_len: float | None = None,
             error: float | None = None, chimera: float | None = None, inversion: float | None = None,
             long_del: float | None = None, long_ins: float | None = None, prefix: str | None = None,
             read_len: int = 150, insert: float = 400, insert_sd: float = 50, n_reads: float = 0.05) -> None:
    """Write n reads (or n pairs) to the writable(s) out1 (and out2)."""
    if profile == "illumina-pairs":
        if out2 is None:
            raise ValueError("illumina-pairs needs two outputs")
        rate = 0.003 if error is None else error
        for b in range((n + PAIR_BATCH - 1) // PAIR_BATCH):
            cnt = min(PAIR_BATCH, n - b * PAIR_BATCH)
            a, c = illumina_batch(ref, seed, b, cnt, read_len, insert, insert_sd, rate, n_reads,
                                  prefix or f"sim_{ILLUMINA_TAG}")
            out1.write(a)
            out2.write(c)
        return
    p = PROFILES[profile]
    fractions = dict(chimera=p.chimera if chimera is None else chimera,
                     inversion=p.inversion if inversion is None else inversion,
                     long_del=p.long_del if long_del is None else long_del,
                     long_ins=p.long_ins if long_ins is None else long_ins)
    if sum(fractions.values()) > 1:
        raise ValueError("structural fractions add up to more than 1")
    for i in range(n):
        out1.write(long_read(ref, p, seed, i, mean_len or p.mean_len, p.error if error is None else error,
                             fractions, prefix or f"sim_{p.tag}"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("ref", help="reference FASTA (plain or .gz)")
    ap.add_argument("--profile", required=True, choices=[*PROFILES, "illumina-pairs"])
    ap.add_argument("-n", type=int, required=True, help="number of reads (pairs for illumina-pairs)")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("-o", "--out", default="-", help="FASTQ output, .gz to compress [stdout]")
    ap.add_argument("--out2", help="FASTQ of read 2 (illumina-pairs)")
    ap.add_argument("--mean-len", type=float, help="mean read length (long reads)")
    ap.add_argument("--error-rate", type=float, help="mean error rate (substitution rate for pairs)")
    ap.add_argument("--chimera", type=float, help="fraction of chimeric reads [ont/clr/hifi: 0.03]")
    ap.add_argument("--inversion", type=float, help="fraction with an inverted middle segment [0.02]")
    ap.add_argument("--long-del", type=float, help="fraction with a 0.5-5 kb deletion [0.015]")
    ap.add_argument("--long-ins", type=float, help="fraction with a 0.3-3 kb random insertion [0.015]")
    ap.add_argument("--prefix", help="read name prefix [sim_<profile>]")
    ap.add_argument("--read-len", type=int, default=150, help="illumina read length [150]")
    ap.add_argument("--insert", type=float, default=400, help="illumina mean insert size [400]")
    ap.add_argument("--insert-sd", type=float, default=50, help="illumina insert size sd [50]")
    ap.add_argument("--n-reads", type=float, default=0.05, help="fraction of illumina reads with N calls [0.05]")
    a = ap.parse_args(argv)
    if a.profile == "illumina-pairs" and (not a.out2 or a.out == "-"):
        ap.error("illumina-pairs needs -o READ1 and --out2 READ2")
    if a.prefix and any(ch.isspace() for ch in a.prefix):
        ap.error("--prefix must not contain whitespace")
    ref = Reference.load(Path(a.ref))
    o1 = Output(a.out)
    o2 = Output(a.out2) if a.out2 else None
    try:
        simulate(ref, a.profile, a.n, a.seed, o1, o2, mean_len=a.mean_len, error=a.error_rate, chimera=a.chimera,
                 inversion=a.inversion, long_del=a.long_del, long_ins=a.long_ins, prefix=a.prefix,
                 read_len=a.read_len, insert=a.insert, insert_sd=a.insert_sd, n_reads=a.n_reads)
    finally:
        o1.close()
        if o2:
            o2.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
