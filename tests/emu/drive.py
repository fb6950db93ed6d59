"""Runs one of the emulator's drivers (tests/emu/run_*.py) in a process of its own, with the fake CuPy
first on its path, so that it replaces the real one in that process only. Used by the *_emulated tests."""
from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
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


def run_cases(module: str, cases: dict, emu_dir) -> dict:
    """Every case (name: (args, knobs)) through run_driver, side by side; name: its CompletedProcess."""
    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        futs = {k: pool.submit(run_driver, module, args, emu_dir, knobs) for k, (args, knobs) in cases.items()}
    return {k: f.result() for k, f in futs.items()}


def report(name: str, case: tuple, r: subprocess.CompletedProcess) -> str:
    """A failed case: its arguments, knobs, exit status and the end of its output."""
    args, knobs = case
    return f"{name} ({' '.join(args)}; {knobs}): exit status {r.returncode}\n{(r.stdout + r.stderr)[-3000:]}"
