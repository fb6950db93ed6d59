"""Build gpuext's native modules from the patched minimap2 2.31 and BWA 0.7.18 sources.

The sources are not in this repository: scripts/upstream.py fetches the mappy 2.31 and pybwa 2.3.2
sdists (or takes $GPUEXT_MAPPY_SDIST / $GPUEXT_PYBWA_SDIST), checks their sha256, and applies
patches/ to copies under build/patched/. gpuext._native.minimap2 is minimap2 plus gpuext's glue;
gpuext._native.bwa is BWA's ksw.c (ksw_extend2, unchanged) plus gx_bwa.c.
"""
import importlib.util
import os
import platform
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("gpuext_upstream", HERE / "scripts" / "upstream.py")
upstream = importlib.util.module_from_spec(spec)
spec.loader.exec_module(upstream)

PATCHED = upstream._tree("patched", "minimap2")
MINIMAP2_C = ["align.c", "bseq.c", "lchain.c", "seed.c", "format.c", "hit.c", "index.c", "pe.c", "jump.c",
              "options.c", "ksw2_extd2_sse.c", "ksw2_exts2_sse.c", "ksw2_extz2_sse.c", "ksw2_ll_sse.c",
              "kalloc.c", "kthread.c", "map.c", "misc.c", "sdust.c", "sketch.c", "esterr.c", "splitidx.c",
              "main.c"]
GLUE_C = ["gpuext/_native/gx_cli.c", "gpuext/_native/gx_ksw.c", "gpuext/_native/gx_engine.c"]
BWA_PATCHED = upstream._tree("patched", "bwa")


class BuildWithUpstream(build_ext):
    """Obtain, verify and patch minimap2 before compiling (idempotent)."""

    def run(self):
        try:
            upstream.apply_patches("minimap2")
            upstream.apply_patches("bwa")
        except upstream.UpstreamError as e:
            sys.exit(f"[E::gpuext-build] {e}")
        super().run()


def native_extension():
    from Cython.Build import cythonize

    cflags = ["-DHAVE_KALLOC", "-Wno-unused-function", "-Wno-unused-variable", "-Wno-sign-compare"]
    if platform.machine().lower() in ("x86_64", "amd64"):
        cflags.append("-msse4.1")  # as mappy 2.31 builds ksw2
    else:
        sys.exit("[E::gpuext-build] only x86-64 is supported (minimap2's ksw2 is built with SSE4.1)")
    rel = os.path.relpath(PATCHED, HERE)
    ext = Extension(
        "gpuext._native.minimap2",
        sources=["gpuext/_native/minimap2.pyx", *GLUE_C, *(f"{rel}/{f}" for f in MINIMAP2_C)],
        include_dirs=[rel, "gpuext/_native"],
        extra_compile_args=cflags,
        libraries=["z", "m", "pthread"],
    )
    return cythonize([ext], compiler_directives={"language_level": "3"}, quiet=True)


def bwa_extension():
    """gpuext._native.bwa: BWA 0.7.18's ksw.c, compiled with the -O2 of BWA's Makefile."""
    from Cython.Build import cythonize

    rel = os.path.relpath(BWA_PATCHED, HERE)
    ext = Extension(
        "gpuext._native.bwa",
        sources=["gpuext/_native/bwa.pyx", "gpuext/_native/gx_bwa.c", f"{rel}/ksw.c"],
        include_dirs=[rel, "gpuext/_native"],
        extra_compile_args=["-O2", "-Wno-unused-function"],
        libraries=["pthread"],
    )
    return cythonize([ext], compiler_directives={"language_level": "3"}, quiet=True)


setup(ext_modules=native_extension() + bwa_extension(), cmdclass={"build_ext": BuildWithUpstream})
