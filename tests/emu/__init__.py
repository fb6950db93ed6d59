"""A CPU emulator of gpuext's CUDA kernels, for tests without a GPU: shim.h and emu.cpp emulate the
CUDA features ksw_extend2.cu uses, build.py compiles a kernel file with them, fakecupy/ lets the real
launcher run on the result and run_launcher.py drives it (tests/kernel/test_ksw_extend2_emulated.py)."""
