"""What a CUDA process's start and exit cost (a probe for the GPU machine; scripts/device_check.sh exit).

usage: exp_exit.py                  every variant below twice, one process each: a table of the process's
                                    wall time, CuPy's import with the context, the work, and the exit
                                    (process end less the last moment the child noted)
       exp_exit.py QUEUES [ctx] [pinned MB] [device MB] [module] [free] [release] [os_exit]
                                    one child: CUDA_DEVICE_MAX_CONNECTIONS=QUEUES, the context, then
                                    page-locked memory from CuPy's pinned pool, device memory from its pool,
                                    gpuext's kernel modules with their warm-up calls, the pools freed, the
                                    primary context reset by the driver (cuDevicePrimaryCtxReset), and the
                                    end by os._exit or normally; prints its moments (wall clock)
       exp_exit.py pick             what asking the driver for the GPUs costs, step by step (cuda.pick's
                                    device_count), in a fresh process each time
"""
import os
import subprocess
import sys
import time

VARIANTS = [
    "8 ctx", "32 ctx", "32 ctx os_exit",
    "32 pinned 256", "32 device 2048", "32 module",
    "32 pinned 256 device 2048 module", "32 pinned 256 device 2048 module os_exit",
    "32 pinned 256 device 2048 module free", "8 pinned 256 device 2048 module",
    "8 pinned 256 device 2048 module free release", "8 pinned 256 device 2048 module release os_exit",
]


def child(queues: str, words: list[str]) -> None:
    os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = queues
    t = {"start": time.time()}
    import cupy

    cupy.cuda.Device(0).compute_capability
    t["ctx"] = time.time()
    keep = []
    if "pinned" in words:
        keep.append(cupy.cuda.alloc_pinned_memory(int(words[words.index("pinned") + 1]) << 20))
    if "device" in words:
        keep.append(cupy.empty(int(words[words.index("device") + 1]) << 20, cupy.uint8))
    if "module" in words:
        from gpuext.backends.cuda import ksw_extd2, ksw_extz2

        ksw_extd2.warm_up()
        ksw_extz2.warm_up()
    cupy.cuda.Device(0).synchronize()
    t["work"] = time.time()
    if "free" in words:
        keep.clear()
        cupy.get_default_memory_pool().free_all_blocks()
        cupy.get_default_pinned_memory_pool().free_all_blocks()
        t["freed"] = time.time()
    if "release" in words:
        import ctypes

        cupy.cuda.Device(0).synchronize()
        ctypes.CDLL("libcuda.so.1").cuDevicePrimaryCtxReset(0)
        t["released"] = time.time()
    print("marks", " ".join(f"{k} {v:.4f}" for k, v in t.items()), flush=True)
    if "os_exit" in words:
        os._exit(0)


def pick_probe() -> None:
    """One fresh process: the steps of cuda.device_count, timed."""
    t = [("start", time.time())]
    import importlib.util

    importlib.util.find_spec("cupy")
    t.append(("find_spec", time.time()))
    import ctypes

    lib = ctypes.CDLL("libcuda.so.1")
    t.append(("CDLL", time.time()))
    lib.cuInit(0)
    t.append(("cuInit", time.time()))
    n = ctypes.c_int(0)
    lib.cuDeviceGetCount(ctypes.byref(n))
    t.append(("count", time.time()))
    print("pick:", "  ".join(f"{k} {t[i + 1][1] - t[i][1]:.3f}" for i, (k, _) in enumerate(t[1:])), flush=True)


def main() -> None:
    for v in VARIANTS:
        for _ in range(2):
            s = time.time()
            out = subprocess.run([sys.executable, __file__, *v.split()], capture_output=True, text=True, check=True)
            e = time.time()
            m = next(line for line in out.stdout.splitlines() if line.startswith("marks")).split()[1:]
            d = dict(zip(m[::2], map(float, m[1::2])))
            free = f" free {d['freed'] - d['work']:5.3f}" if "freed" in d else ""
            if "released" in d:
                free += f" release {d['released'] - d.get('freed', d['work']):5.3f}"
            print(f"{v:42s} total {e - s:6.3f}  ctx {d['ctx'] - d['start']:5.3f}  work {d['work'] - d['ctx']:5.3f}{free}"
                  f"  exit {e - max(d.values()):6.3f}", flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__)
    elif sys.argv[1:2] == ["pick"]:
        if sys.argv[2:3] == ["child"]:
            pick_probe()
        else:
            for _ in range(3):
                print(subprocess.run([sys.executable, __file__, "pick", "child"], capture_output=True, text=True,
                                     check=True).stdout.strip(), flush=True)
    elif len(sys.argv) > 1:
        child(sys.argv[1], sys.argv[2:])
    else:
        main()
