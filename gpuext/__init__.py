"""gpuext: minimap2 and BWA-MEM seed extension on an NVIDIA GPU, with byte-identical output.

The command line is `gpuext map` (a drop-in for `minimap2`); see gpuext/cli/. docs/architecture.md
describes the data flow: input -> plan jobs -> batch -> backend (cpu | cuda) -> reinsert -> stock
post-processing -> output.
"""
__version__ = "0.1.0"

from .api import Aligner, Alignment, ReadResult  # noqa: E402

__all__ = ["Aligner", "Alignment", "ReadResult", "__version__"]
