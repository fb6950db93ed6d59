// The CUDA features gpuext/backends/cuda/kernels/ksw_extend2.cu uses, as plain C++ for the CPU
// emulator: build.py compiles the kernel file with -DGX_EMU after this header; emu.cpp runs it.
//
// Every thread of a block is a fiber (emu.cpp), and blocks run one after another. A warp collective
// (__shfl_sync, __reduce_*_sync) is a rendezvous of exactly the lanes of its mask: each lane posts its
// operand and waits until every lane of the mask waits on a collective with that mask, and the last
// one to arrive computes every lane's result. Groups of lanes of one warp therefore run
// independently, as on the GPU; a mask naming a lane that has exited, a shuffle reading a lane
// outside its mask and a deadlock are reported as errors rather than hanging.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>

struct emu_dim3 { unsigned x, y, z; };
extern unsigned g_tid, g_block, g_bdim;
#define threadIdx (emu_dim3{g_tid, 0, 0})
#define blockIdx (emu_dim3{g_block, 0, 0})
#define blockDim (emu_dim3{g_bdim, 1, 1})
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static   // one block runs at a time; the kernel clears what it needs cleared
#define __constant__
#define __launch_bounds__(...)
#define __restrict__ __restrict

struct __attribute__((aligned(8))) int2 { int x, y; };
struct __attribute__((aligned(8))) uint2 { unsigned x, y; };
static inline int2 make_int2(int a, int b) { return int2{a, b}; }
static inline uint2 make_uint2(unsigned a, unsigned b) { return uint2{a, b}; }

static inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
static inline int __ffs(int x) { return __builtin_ffs(x); }
// selector nibbles use their low 3 bits only (libdevice's __nv_byte_perm)
static inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s)
{
	const uint64_t v = (uint64_t)y << 32 | x;
	unsigned r = 0;
	for (int n = 0; n < 4; ++n) r |= (unsigned)(v >> (8 * ((s >> (4 * n)) & 7)) & 0xff) << (8 * n);
	return r;
}

// fibers switch only inside collectives and barriers, so a plain read-modify-write is atomic here
template <class T, class U> static inline T atomicAdd(T *p, U v) { T o = *p; *p = (T)(o + (T)v); return o; }

// __ldg is checked against the buffers of the launch's array arguments (a read past a job's
// sequence or record is a bug the GPU would hide)
void emu_check_ptr(const void *p, size_t n);
template <class T> static inline T __ldg(const T *p) { emu_check_ptr(p, sizeof(T)); return *p; }

enum { EMU_SHFL, EMU_MIN_I, EMU_MIN_U, EMU_MAX_I, EMU_MAX_U };
// posts this lane's (kind, operand, argument, width) for the lanes of mask; returns its result
uint32_t emu_collective(unsigned mask, int kind, uint32_t v, int arg, int width);
template <class T> static inline T __shfl_sync(unsigned mask, T v, int src, int width = 32)
{
	static_assert(sizeof(T) == 4, "emu: shuffles of 4-byte values only");
	uint32_t x;
	memcpy(&x, &v, 4);
	x = emu_collective(mask, EMU_SHFL, x, src, width);
	memcpy(&v, &x, 4);
	return v;
}
static inline int __reduce_min_sync(unsigned mask, int v) { return (int)emu_collective(mask, EMU_MIN_I, v, 0, 32); }
static inline unsigned __reduce_min_sync(unsigned mask, unsigned v) { return emu_collective(mask, EMU_MIN_U, v, 0, 32); }
static inline int __reduce_max_sync(unsigned mask, int v) { return (int)emu_collective(mask, EMU_MAX_I, v, 0, 32); }
static inline unsigned __reduce_max_sync(unsigned mask, unsigned v) { return emu_collective(mask, EMU_MAX_U, v, 0, 32); }

void __syncthreads();  // waits for every thread of the block that has not exited

// runs grid blocks of block threads of f; 0, or 1 after an emulator error (see emu_last_error)
int emu_launch(const char *name, unsigned grid, unsigned block, std::function<void()> f);
