"""Runs one of the emulator's drivers (tests/emu/run_*.py) in a process of its own, with the fake CuPy
first on its path, so that it replaces the real one in that process only. Used by the *_emulated tests."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def run_driver(module: str, args, emu_dir, knobs: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m tests.emu.<module> args` with the emulator libraries in emu_dir. knobs: the launcher's
    environment is the case's alone (every GPUEXT_KSW_*, GPUEXT_GPU_MEM* and GX_EMU_* variable of this
    process dropped, then knobs set); None: this process's environment as it is."""
    path = [str(ROOT / "tests" / "emu" / "fakecupy"), str(ROOT), os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ)
    if knobs is not None:
        env = {k: v for k, v in env.items() if not k.startswith(("GPUEXT_KSW_", "GPUEXT_GPU_MEM", "GX_EMU_"))}
        env.update(knobs)
    env.update(GPUEXT_EMU_DIR=str(emu_dir), PYTHONPATH=os.pathsep.join(filter(None, path)))
    # faulthandler: a kernel that crashes the emulator still shows where the launcher was
    return subprocess.run([sys.executable, "-X", "faulthandler", "-m", f"tests.emu.{module}", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
