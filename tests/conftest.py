"""Shared fixtures: the stock minimap2 oracle, real and simulated data sets, and the gpu marker.

GPU tests (`@pytest.mark.gpu`) are skipped when CuPy or a GPU is missing; CuPy is never imported at
module level, only inside the collection hook.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))


def _gpu_available() -> bool:
    try:
        import cupy  # noqa: F401

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if any("gpu" in item.keywords for item in items) and not _gpu_available():
        skip = pytest.mark.skip(reason="needs CuPy and an NVIDIA GPU")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)
    if not os.environ.get("GPUEXT_SLOW"):
        skip = pytest.mark.skip(reason="slow; set GPUEXT_SLOW=1")
        for item in items:
            if "slow" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def oracle() -> Path:
    """The stock minimap2 2.31 CLI, built unpatched from the same verified sdist."""
    import upstream

    return upstream.build_oracle("minimap2")


class DataSets:
    """Paths of the data sets of scripts/fetch_data.py (real) and scripts/simulate_reads.py."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self._cache: dict[str, list[str]] = {}

    def __call__(self, name: str) -> list[str]:
        if name not in self._cache:
            if name.startswith("sim-"):
                self._cache[name] = self._simulate(name)
            else:
                r = subprocess.run([sys.executable, str(ROOT / "scripts" / "fetch_data.py"), "get", name],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    raise RuntimeError(f"fetch_data.py get {name} failed: {r.stderr[-2000:]}")
                self._cache[name] = r.stdout.strip().split("\n")[-1].split("\t")[1:]
        return self._cache[name]

    def _simulate(self, name: str) -> list[str]:
        profile = name[len("sim-"):]
        ref = self("ecoli-ont")[0]
        n = {"ont": "150", "hifi": "150", "clr": "150", "illumina-pairs": "2000"}[profile]
        out = self.tmp / f"{name}.fq.gz"
        cmd = [sys.executable, str(ROOT / "scripts" / "simulate_reads.py"), "--profile", profile, "-n", n,
               "--seed", "7", ref]
        if profile == "illumina-pairs":
            outs = [self.tmp / f"{name}_1.fq.gz", self.tmp / f"{name}_2.fq.gz"]
            cmd += ["-o", str(outs[0]), "--out2", str(outs[1])]
        else:
            outs = [out]
            cmd += ["-o", str(out)]
        subprocess.run(cmd, check=True, capture_output=True)
        return [ref, *map(str, outs)]


@pytest.fixture(scope="session")
def datasets(tmp_path_factory) -> DataSets:
    return DataSets(tmp_path_factory.mktemp("data"))


def run_gpuext(args: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpuext", *args], capture_output=True, **kw)
