"""What a CUDA process's start and exit cost (a probe for the GPU machine; scripts/device_check.sh exit).

usage: exp_exit.py                  every variant below twice, one process each: a table of the process's
                                    wall time, CuPy's import with the context, the work, and the exit
                                    (process end less the last moment the child noted)
       exp_exit.py QUEUES [ctx] [pinned MB] [device MB] [module] [free] [os_exit]
                                    one child: CUDA_DEVICE_MAX_CONNECTIONS=QUEUES, the context, then
                                    page-locked memory from CuPy's pinned pool, device memory from its pool,
                                    gpuext's kernel modules with their warm-up calls, the pools freed, and the
                                    end by os._exit or normally; prints its moments (wall clock)
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
    print("marks", " ".join(f"{k} {v:.4f}" for k, v in t.items()), flush=True)
    if "os_exit" in words:
        os._exit(0)


def main() -> None:
    for v in VARIANTS:
        for _ in range(2):
            s = time.time()
            out = subprocess.run([sys.executable, __file__, *v.split()], capture_output=True, text=True, check=True)
            e = time.time()
            m = next(line for line in out.stdout.splitlines() if line.startswith("marks")).split()[1:]
            d = dict(zip(m[::2], map(float, m[1::2])))
            free = f" free {d['freed'] - d['work']:5.3f}" if "freed" in d else ""
            print(f"{v:42s} total {e - s:6.3f}  ctx {d['ctx'] - d['start']:5.3f}  work {d['work'] - d['ctx']:5.3f}{free}"
                  f"  exit {e - max(d.values()):6.3f}", flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__)
    elif len(sys.argv) > 1:
        child(sys.argv[1], sys.argv[2:])
    else:
        main()
