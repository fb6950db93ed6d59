"""gpuext's command line: `gpuext <subcommand> ...`, one module per subcommand.

Neighbours: gpuext/cli/map.py (the minimap2 drop-in). Subcommands register in SUBCOMMANDS.
"""
from __future__ import annotations

import sys

from .. import __version__

SUBCOMMANDS = {
    "map": ("gpuext.cli.map", "map reads like minimap2 2.31, extension on the GPU; same flags, same output"),
    "compare": ("gpuext.cli.compare", "compare two SAM/BAM/PAF files record by record"),
    "verify": ("gpuext.cli.verify", "run stock minimap2 2.31 and gpuext on the same inputs and compare"),
    "stats": ("gpuext.cli.stats", "counts, read-length and identity distributions of a SAM/BAM file"),
    "bwa-replay": ("gpuext.cli.bwa_replay", "replay a BWA-MEM seed dump (ksw_extend2) on cpu or cuda, check every output"),
}


def usage() -> str:
    lines = [f"Usage: gpuext <command> [options]   (gpuext {__version__})", "Commands:"]
    lines += [f"  {name:<10} {help_}" for name, (_, help_) in SUBCOMMANDS.items()]
    lines.append("Run `gpuext <command> -h` for a command's options.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(usage(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 1
    if argv[0] == "--version":
        print(__version__)
        return 0
    if argv[0] not in SUBCOMMANDS:
        print(f"[E::gpuext] unknown command '{argv[0]}'\n{usage()}", file=sys.stderr)
        return 1
    import importlib

    from .. import timeline

    timeline.mark(f"gpuext {argv[0]}")
    module = importlib.import_module(SUBCOMMANDS[argv[0]][0])
    return module.main(argv[1:])
