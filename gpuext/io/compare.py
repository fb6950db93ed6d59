"""Record-by-record comparison of two SAM or PAF texts: the exactness check against stock minimap2.

Header lines are compared too, except gpuext's own @PG line (ID:gpuext), which stock output lacks.
Neighbours: scripts/exactness.py and the regression tests call compare_texts/compare_files.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Report:
    """What two outputs have in common and where they differ (first differences kept)."""

    header_same: int = 0
    header_diff: int = 0
    records_same: int = 0
    records_diff: int = 0
    only_a: int = 0
    only_b: int = 0
    first: list[str] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not (self.header_diff or self.records_diff or self.only_a or self.only_b)

    def summary(self) -> str:
        s = (f"header: {self.header_same} identical, {self.header_diff} different; records: "
             f"{self.records_same} identical, {self.records_diff} different, {self.only_a} only in A, "
             f"{self.only_b} only in B")
        return "\n".join([s, *self.first])


def _split(text: bytes) -> tuple[list[bytes], list[bytes]]:
    header, records = [], []
    for line in text.split(b"\n"):
        if not line:
            continue
        if line.startswith(b"@") and not records and (len(line) > 3 and line[3:4] == b"\t"):
            if not line.startswith(b"@PG\tID:gpuext"):
                header.append(line)
        else:
            records.append(line)
    return header, records


def compare_texts(a: bytes, b: bytes, max_shown: int = 5) -> Report:
    """Compare two SAM/PAF outputs; records are compared in order, byte for byte."""
    rep = Report()
    (ha, ra), (hb, rb) = _split(a), _split(b)

    def note(kind: str, i: int, x: bytes | None, y: bytes | None) -> None:
        if len(rep.first) < max_shown:
            rep.first.append(f"{kind} {i + 1}:\n  A: {x.decode(errors='replace')[:300] if x is not None else '(none)'}\n"
                             f"  B: {y.decode(errors='replace')[:300] if y is not None else '(none)'}")

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
            note("record", i, x, y)
        elif y is None:
            rep.only_a += 1
            note("record", i, x, y)
        elif x == y:
            rep.records_same += 1
        else:
            rep.records_diff += 1
            note("record", i, x, y)
    return rep


def compare_files(a: str | Path, b: str | Path, max_shown: int = 5) -> Report:
    return compare_texts(Path(a).read_bytes(), Path(b).read_bytes(), max_shown)
