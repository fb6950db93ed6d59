"""The batch engine: rounds.py (BatchEngine), jobs.py (the job/result contract), verify.py (--verify)."""


def pipeline_steps(max_rounds: int) -> int:
    """minimap2 pipeline steps per batch of reads: a recording round and a backend step for each of the
    max_rounds rounds, then the final round (BatchEngine's layout). Without NumPy, for `gpuext map`, which
    installs the engine before it is built."""
    return 2 * max_rounds + 1
