"""Sizes written like minimap2's -K and -I (800M, 8G, 1.5e9; K/M/G are powers of 1000), in bytes."""
from __future__ import annotations


def parse_size(text: str) -> int:
    """'8G' -> 8_000_000_000; raise ValueError for anything else than a number with K, M or G."""
    units = {"K": 1e3, "M": 1e6, "G": 1e9}
    t = text.strip().upper()
    return int(float(t[:-1]) * units[t[-1]]) if t and t[-1] in units else int(float(t))
