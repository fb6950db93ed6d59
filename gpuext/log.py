"""Logging on stderr in minimap2's style: `[M::func::real*cpu] message`, `[E::func] error`.

Used by every stage; nothing else writes to stderr directly.
"""
from __future__ import annotations

import os
import sys
import time

_T0 = time.perf_counter()
verbose = 3


def _stamp() -> str:
    real = time.perf_counter() - _T0
    cpu = os.times()
    ratio = (cpu.user + cpu.system) / real if real > 0 else 0.0
    return f"{real:.3f}*{ratio:.2f}"


def info(func: str, msg: str) -> None:
    if verbose >= 3:
        print(f"[M::{func}::{_stamp()}] {msg}", file=sys.stderr, flush=True)


def warn(func: str, msg: str) -> None:
    if verbose >= 2:
        print(f"[W::{func}] {msg}", file=sys.stderr, flush=True)


def error(func: str, msg: str) -> None:
    print(f"[E::{func}] {msg}", file=sys.stderr, flush=True)
