"""Record-by-record comparison of two SAM (or PAF) texts: the exactness check against stock minimap2.

Header lines are compared in order, except @PG lines as asked (by default gpuext's own @PG line,
which stock output lacks). Records are compared in order, byte for byte; for records that differ the
report counts which fields differ (SAM's eleven columns by name, then tags by their two letters).
Tags listed in ignore_tags are left out of the comparison. Neighbours: `gpuext compare` and
`gpuext verify` (gpuext/cli/) and the regression tests.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

SAM_COLUMNS = ("QNAME", "FLAG", "RNAME", "POS", "MAPQ", "CIGAR", "RNEXT", "PNEXT", "TLEN", "SEQ", "QUAL")
PAF_COLUMNS = ("qname", "qlen", "qstart", "qend", "strand", "tname", "tlen", "tstart", "tend", "matches",
               "alnlen", "mapq")


@dataclass
class Report:
    """What two outputs have in common and where they differ (first differences kept)."""

    header_same: int = 0
    header_diff: int = 0
    records_same: int = 0
    records_diff: int = 0
    only_a: int = 0
    only_b: int = 0
    fields: Counter = field(default_factory=Counter)
    first: list[str] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not (self.header_diff or self.records_diff or self.only_a or self.only_b)

    def summary(self) -> str:
        s = (f"header: {self.header_same} identical, {self.header_diff} different; records: "
             f"{self.records_same} identical, {self.records_diff} different, {self.only_a} only in A, "
             f"{self.only_b} only in B")
        if self.fields:
            s += "\nfields that differ: " + ", ".join(f"{k} ({n})" for k, n in self.fields.most_common())
        return "\n".join([s, *self.first])


def _is_header(line: bytes) -> bool:
    return line.startswith(b"@") and len(line) > 3 and line[3:4] == b"\t"


def _split(text: bytes, ignore_pg: str) -> tuple[list[bytes], list[bytes]]:
    header, records = [], []
    for line in text.split(b"\n"):
        if not line:
            continue
        if not records and _is_header(line):
            if line.startswith(b"@PG\t") and (ignore_pg == "all" or
                                             (ignore_pg == "gpuext" and line.startswith(b"@PG\tID:gpuext"))):
                continue
            header.append(line)
        else:
            records.append(line)
    return header, records


def _columns(rec: bytes) -> tuple[list[bytes], dict[bytes, bytes], tuple[str, ...]]:
    f = rec.split(b"\t")
    names = PAF_COLUMNS if len(f) >= 12 and f[4] in (b"+", b"-") else SAM_COLUMNS
    n = len(names)
    tags = {}
    for t in f[n:]:
        tags[t[:2]] = t
    return f[:n], tags, names


def _differing_fields(x: bytes, y: bytes, ignore: set[bytes]) -> list[str]:
    cx, tx, names = _columns(x)
    cy, ty, _ = _columns(y)
    out = [names[i] for i in range(min(len(cx), len(cy))) if cx[i] != cy[i]]
    if len(cx) != len(cy):
        out.append("columns")
    for k in sorted(set(tx) | set(ty)):
        if k not in ignore and tx.get(k) != ty.get(k):
            out.append(k.decode(errors="replace"))
    return out


def compare_texts(a: bytes, b: bytes, max_shown: int = 5, ignore_pg: str = "gpuext",
                  ignore_tags: tuple[str, ...] = ()) -> Report:
    """Compare two SAM/PAF outputs; records are compared in order."""
    rep = Report()
    ignore = {t.encode() for t in ignore_tags}
    (ha, ra), (hb, rb) = _split(a, ignore_pg), _split(b, ignore_pg)

    def note(kind: str, i: int, x: bytes | None, y: bytes | None, what: str = "") -> None:
        if len(rep.first) < max_shown:
            show = lambda z: z.decode(errors="replace")[:300] if z is not None else "(none)"  # noqa: E731
            rep.first.append(f"{kind} {i + 1}{what}:\n  A: {show(x)}\n  B: {show(y)}")

    for i in range(max(len(ha), len(hb))):
        x = ha[i] if i < len(ha) else None
        y = hb[i] if i < len(hb) else None
        if x == y:
            rep.header_same += 1
        else:
            rep.header_diff += 1
            note("header line", i, x, y)
    for i in range(max(len(ra), len(rb))):
        x = ra[i] if i < len(ra) else None
        y = rb[i] if i < len(rb) else None
        if x is None:
            rep.only_b += 1
            note("record", i, x, y, " (only in B)")
        elif y is None:
            rep.only_a += 1
            note("record", i, x, y, " (only in A)")
        elif x == y:
            rep.records_same += 1
        else:
            diff = _differing_fields(x, y, ignore)
            if not diff:
                rep.records_same += 1
                continue
            rep.records_diff += 1
            rep.fields.update(diff)
            note("record", i, x, y, f" ({', '.join(diff)})")
    return rep


def compare_files(a: str | Path, b: str | Path, max_shown: int = 5, ignore_pg: str = "gpuext",
                  ignore_tags: tuple[str, ...] = ()) -> Report:
    """Compare two SAM, BAM or PAF files (BAM read through pysam)."""
    from .bam import read_sam_text

    return compare_texts(read_sam_text(str(a)), read_sam_text(str(b)), max_shown, ignore_pg, ignore_tags)
