"""`gpuext map`: a drop-in for the minimap2 2.31 command line.

minimap2's own option parser and driver run (gpuext._native.minimap2.run_cli, the patched main()), so
every minimap2 flag, default and message is the stock one. gpuext's own options are long options
that minimap2 does not have; they are taken out of the command line before minimap2 sees it, and kept
out of minimap2's @PG line. gpuext adds its own samtools-style @PG line after minimap2's.

Neighbours: gpuext/cli/__init__.py dispatches here; the extension stage is served by the provider
chosen with --backend (gpuext._native for the cpu hook).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field

from .. import __version__, log

BACKENDS = ("auto", "cpu", "stock")

HELP = f"""
gpuext options (minimap2's options are all accepted, with minimap2's defaults):
  --backend STR  who computes the extension jobs: auto, cpu (the stock ksw2 code through
                 gpuext's hook) or stock (minimap2 unhooked) [auto]
  --version      print gpuext's version and the minimap2 version it carries
"""


@dataclass
class GpuextOptions:
    """Options of gpuext itself, split off the minimap2 command line."""

    backend: str = "auto"
    minimap2_argv: list[str] = field(default_factory=list)


class UsageError(ValueError):
    """A bad gpuext option."""


# long option -> (attribute, takes a value, allowed values)
_OPTIONS = {"--backend": ("backend", True, BACKENDS)}


def split_argv(argv: list[str]) -> GpuextOptions:
    """Separate gpuext's options from minimap2's; minimap2's keep their order."""
    opts = GpuextOptions()
    rest: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            rest.extend(argv[i:])
            break
        name, eq, value = a.partition("=")
        if name in _OPTIONS:
            attr, takes_value, allowed = _OPTIONS[name]
            if takes_value and not eq:
                if i + 1 >= len(argv):
                    raise UsageError(f"option '{name}' needs a value")
                i += 1
                value = argv[i]
            if allowed and value not in allowed:
                raise UsageError(f"option '{name}' takes one of {', '.join(allowed)}, not '{value}'")
            setattr(opts, attr, value)
        else:
            rest.append(a)
        i += 1
    opts.minimap2_argv = rest
    return opts


def pg_line(argv: list[str]) -> str:
    """gpuext's @PG line (samtools style: it follows minimap2's, PP points at it)."""
    cl = " ".join(["gpuext", "map", *argv])
    return f"@PG\tID:gpuext\tPN:gpuext\tPP:minimap2\tVN:{__version__}\tCL:{cl}"


def main(argv: list[str]) -> int:
    try:
        opts = split_argv(argv)
    except UsageError as e:
        log.error("gpuext::map", str(e))
        return 1
    from .._native import minimap2 as native

    if "--version" in opts.minimap2_argv:
        print(f"gpuext {__version__} (minimap2 {native.minimap2_version})")
        return 0
    backend = "cpu" if opts.backend == "auto" else opts.backend
    native.set_provider(backend)
    native.reset_counters()
    sys.stdout.flush()
    ret = native.run_cli(["gpuext map", *opts.minimap2_argv], pg_line(argv))
    if "-h" in opts.minimap2_argv or "--help" in opts.minimap2_argv:
        print(HELP, end="")
        return ret
    if ret == 0 and backend != "stock":
        counts = native.counters()
        jobs = sum(j for j, _ in counts.values())
        cells = sum(c for _, c in counts.values())
        log.info("gpuext::map", f"backend {backend}: {jobs} extension jobs, {cells / 1e9:.3f} G DP cells")
    return ret
