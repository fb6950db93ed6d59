"""BWA-MEM side of gpuext: the seed dump of the patched bwa (dump.py) and its replay.

Neighbours: gpuext/_native/bwa.pyx (BWA's own ksw_extend2 on CPU threads),
gpuext/backends/cuda/ksw_extend2.py (the CUDA kernel), gpuext/cli/bwa_replay.py (the subcommand).
"""
