"""What sending a batch's sequences to the GPU costs, by way (a probe for the GPU machine): page-locking a
fresh buffer, the copy into it, its DMA, a DMA from ordinary (pageable) memory, and the same again with the
buffer reused. usage: exp_upload.py [MB ...] (default 16 64 160)"""
import ctypes
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def main(sizes):
    import cupy

    cupy.cuda.Device(0).synchronize()
    st = cupy.cuda.Stream(non_blocking=True)
    pool = ThreadPoolExecutor(8)
    piece = 4 << 20
    for mb in sizes:
        n = mb << 20
        src = np.random.default_rng(1).integers(0, 4, n, dtype=np.uint8)
        dev = cupy.empty(n, np.uint8)
        cupy.cuda.Device(0).synchronize()
        row = [f"{mb:4d} MB:"]
        for rnd in (1, 2):
            t = time.perf_counter()
            buf = np.frombuffer(cupy.cuda.PinnedMemoryPointer(cupy.cuda.PinnedMemory(n), 0), np.uint8, n)
            t_alloc = time.perf_counter() - t
            for reuse in (False, True):
                t = time.perf_counter()

                def piece_copy(lo):
                    hi = min(n, lo + piece)
                    ctypes.memmove(buf.ctypes.data + lo, src.ctypes.data + lo, hi - lo)
                    cupy.cuda.runtime.memcpyAsync(dev.data.ptr + lo, buf.ctypes.data + lo, hi - lo, 1, st.ptr)

                list(pool.map(piece_copy, range(0, n, piece)))
                st.synchronize()
                row.append(f"{'reused' if reuse else 'fresh'} staged {time.perf_counter() - t:.4f}")
            t = time.perf_counter()
            cupy.cuda.runtime.memcpyAsync(dev.data.ptr, src.ctypes.data, n, 1, st.ptr)
            st.synchronize()
            t_page = time.perf_counter() - t
            t = time.perf_counter()

            def page_piece(lo):
                hi = min(n, lo + piece)
                cupy.cuda.runtime.memcpyAsync(dev.data.ptr + lo, src.ctypes.data + lo, hi - lo, 1, st.ptr)

            list(pool.map(page_piece, range(0, n, piece)))
            st.synchronize()
            t_page8 = time.perf_counter() - t
            row.append(f"pin-alloc {t_alloc:.4f} pageable {t_page:.4f} pageable-8thr {t_page8:.4f}")
            del buf
        print(" ".join(row), flush=True)


if __name__ == "__main__":
    main([int(x) for x in sys.argv[1:]] or [16, 64, 160])
