"""A CPU emulator of gpuext's CUDA kernels, for tests without a GPU: shim.h and emu.cpp emulate the
CUDA features ksw_extend2.cu and ksw_extd2.cu use, build.py compiles a kernel file with them, fakecupy/
lets the real launchers run on the result, and run_launcher.py (BWA's ksw_extend2), run_extd2.py and
run_extz2.py (minimap2's ksw_extd2 and ksw_extz2) drive them, each started by drive.run_driver from
tests/kernel/test_ksw_extend2_emulated.py, test_ksw_extd2_emulated.py and test_ksw_extz2_emulated.py."""
