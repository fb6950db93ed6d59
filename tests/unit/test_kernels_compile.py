"""Every CUDA kernel shipped in the package compiles for sm_90 with nvcc (no GPU needed).

The source is taken through the same loader the cuda backend uses (importlib.resources, so a file
missing from the package data fails here), then compiled with `nvcc -arch=sm_90 -c`.
"""
import importlib.resources
import shutil
import subprocess

import pytest

from gpuext.backends.cuda import loader

KERNELS = sorted(p.name for p in importlib.resources.files("gpuext.backends.cuda").joinpath("kernels").iterdir()
                 if p.name.endswith(".cu"))


def test_kernels_are_package_data():
    assert "ksw_extd2.cu" in KERNELS


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("name", KERNELS)
def test_kernel_compiles_for_sm90(name, tmp_path):
    src = tmp_path / name
    src.write_text(loader.kernel_source(name))
    r = subprocess.run(["nvcc", f"-arch={loader.GPU_ARCH}", loader.CXX_STD, "-c", str(src), "-o", str(tmp_path / "k.o")],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_warm_up_looks_up_every_kernel_of_the_module(tmp_path):
    """ksw_extd2.kernel_names, the kernels the cuda backend's warm-up looks up (so that CUDA loads them
    before the first call), are exactly the module's entry points in the default configuration."""
    import re

    from gpuext.backends.cuda import ksw_extd2

    defines, _, _, used = ksw_extd2.module_defines()
    src = tmp_path / "ksw_extd2.cu"
    src.write_text(loader.kernel_source("ksw_extd2.cu", defines))
    r = subprocess.run(["nvcc", f"-arch={loader.GPU_ARCH}", loader.CXX_STD, "-ptx", str(src), "-o", str(tmp_path / "k.ptx")],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    entries = set(re.findall(r"\.entry\s+(\w+)\(", (tmp_path / "k.ptx").read_text()))
    assert sorted(ksw_extd2.kernel_names(used)) == sorted(entries)

