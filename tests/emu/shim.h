// The CUDA features gpuext's kernel files (ksw_extend2.cu, ksw_extd2.cu) use, as plain C++ for the
// CPU emulator: build.py compiles a kernel file with -DGX_EMU after this header; emu.cpp runs it.
//
// Every thread of a block is a fiber (emu.cpp), and blocks run one after another. A warp collective
// (__shfl*_sync, __reduce_*_sync, __any_sync, __syncwarp) is a rendezvous of exactly the lanes of its
// mask: each lane posts its operand and waits until every lane of the mask waits on a collective with
// that mask, and the last one to arrive computes every lane's result. Groups of lanes of one warp
// therefore run independently, as on the GPU; a mask naming a lane that has exited, lanes of one mask
// in different collectives, a shuffle reading a lane outside its mask and a deadlock are reported as
// errors rather than hanging.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>

struct emu_dim3 { unsigned x, y, z; };
extern unsigned g_tid, g_block, g_bdim, g_grid;
#define threadIdx (emu_dim3{g_tid, 0, 0})
#define blockIdx (emu_dim3{g_block, 0, 0})
#define blockDim (emu_dim3{g_bdim, 1, 1})
#define gridDim (emu_dim3{g_grid, 1, 1})
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static   // one block runs at a time; the kernel clears what it needs cleared
#define __constant__
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))
// the block's dynamic shared memory (`extern __shared__ T name[];`, which build.py turns into a
// reference to this pointer): the launch's bytes, ending at an inaccessible page (emu.cpp)
extern char *emu_dyn_shared;

struct __attribute__((aligned(8))) int2 { int x, y; };
struct __attribute__((aligned(8))) uint2 { unsigned x, y; };
struct __attribute__((aligned(16))) int4 { int x, y, z, w; };
struct __attribute__((aligned(16))) uint4 { unsigned x, y, z, w; };
static inline int2 make_int2(int a, int b) { return int2{a, b}; }
static inline uint2 make_uint2(unsigned a, unsigned b) { return uint2{a, b}; }
static inline int4 make_int4(int a, int b, int c, int d) { return int4{a, b, c, d}; }
static inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return uint4{a, b, c, d}; }
static inline int min(int a, int b) { return a < b ? a : b; }
static inline int max(int a, int b) { return a > b ? a : b; }
// DPX (sm_90): the max of three signed ints
static inline int __vimax3_s32(int a, int b, int c) { return max(max(a, b), c); }
static inline int __viaddmin_s32(int a, int b, int c) { return min(a + b, c); }
static inline int __viaddmax_s32(int a, int b, int c) { return max(a + b, c); }
// 16x2: each halfword on its own, as signed 16-bit values; sums wrap
template <class F> static inline unsigned emu_halves(unsigned a, unsigned b, unsigned c, F f)
{
	unsigned r = 0;
	for (int k = 0; k < 2; ++k)
		r |= (unsigned)(uint16_t)f((int16_t)(a >> 16 * k), (int16_t)(b >> 16 * k), (int16_t)(c >> 16 * k)) << 16 * k;
	return r;
}
static inline unsigned __vadd2(unsigned a, unsigned b) { return emu_halves(a, b, 0, [](int x, int y, int) { return x + y; }); }
static inline unsigned __vsub2(unsigned a, unsigned b) { return emu_halves(a, b, 0, [](int x, int y, int) { return x - y; }); }
static inline unsigned __vmins2(unsigned a, unsigned b) { return emu_halves(a, b, 0, [](int x, int y, int) { return min(x, y); }); }
static inline unsigned __vmaxs2(unsigned a, unsigned b) { return emu_halves(a, b, 0, [](int x, int y, int) { return max(x, y); }); }
static inline unsigned __vimax_s16x2_relu(unsigned a, unsigned b)
{
	return emu_halves(a, b, 0, [](int x, int y, int) { return max(max(x, y), 0); });
}
static inline unsigned __vimax3_s16x2(unsigned a, unsigned b, unsigned c)
{
	return emu_halves(a, b, c, [](int x, int y, int z) { return max(max(x, y), z); });
}
static inline unsigned __viaddmax_s16x2(unsigned a, unsigned b, unsigned c)
{
	return emu_halves(a, b, c, [](int x, int y, int z) { return max((int)(int16_t)(x + y), z); });
}
static inline unsigned __viaddmin_s16x2(unsigned a, unsigned b, unsigned c)
{
	return emu_halves(a, b, c, [](int x, int y, int z) { return min((int)(int16_t)(x + y), z); });
}

static inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
static inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
static inline int __ffs(int x) { return __builtin_ffs(x); }
// selector nibbles use their low 3 bits only (libdevice's __nv_byte_perm)
static inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s)
{
	const uint64_t v = (uint64_t)y << 32 | x;
	unsigned r = 0;
	for (int n = 0; n < 4; ++n) r |= (unsigned)(v >> (8 * ((s >> (4 * n)) & 7)) & 0xff) << (8 * n);
	return r;
}
// hi:lo shifted by min(s, 32) bits: the high word (left), the low word (right)
static inline unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned s)
{
	return (unsigned)((((uint64_t)hi << 32 | lo) << (s < 32 ? s : 32)) >> 32);
}
static inline unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned s)
{
	return (unsigned)(((uint64_t)hi << 32 | lo) >> (s < 32 ? s : 32));
}
// hi:lo shifted right by s mod 32 bits, the low word (a rotation when hi == lo)
static inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s)
{
	return (unsigned)(((uint64_t)hi << 32 | lo) >> (s & 31));
}

// byte-SIMD: each byte on its own, as signed 8-bit values; sums wrap (no saturation), comparisons
// give 0xff or 0x00
template <class F> static inline unsigned emu_bytes4(unsigned a, unsigned b, F f)
{
	unsigned r = 0;
	for (int k = 0; k < 4; ++k)
		r |= (unsigned)(uint8_t)f((int8_t)(a >> 8 * k), (int8_t)(b >> 8 * k)) << 8 * k;
	return r;
}
static inline unsigned __vadd4(unsigned a, unsigned b) { return emu_bytes4(a, b, [](int x, int y) { return x + y; }); }
static inline unsigned __vsub4(unsigned a, unsigned b) { return emu_bytes4(a, b, [](int x, int y) { return x - y; }); }
static inline unsigned __vmins4(unsigned a, unsigned b)
{
	return emu_bytes4(a, b, [](int x, int y) { return x < y ? x : y; });
}
static inline unsigned __vcmpgts4(unsigned a, unsigned b)
{
	return emu_bytes4(a, b, [](int x, int y) { return x > y ? -1 : 0; });
}
static inline unsigned __vcmpeq4(unsigned a, unsigned b)
{
	return emu_bytes4(a, b, [](int x, int y) { return x == y ? -1 : 0; });
}

// fibers switch only inside collectives and barriers, so a plain read-modify-write is atomic here
template <class T, class U> static inline T atomicAdd(T *p, U v) { T o = *p; *p = (T)(o + (T)v); return o; }
template <class T, class U> static inline T atomicMax(T *p, U v) { T o = *p; if ((T)v > o) *p = (T)v; return o; }
static inline void __threadfence() {}
static inline void __nanosleep(unsigned) {}  // a spin-wait's pause (blocks run in order: producers are done)
template <class T> static inline T __ldcg(const T *p) { return *p; }

// __ldg is checked against the buffers of the launch's array arguments (a read past a job's
// sequence or record is a bug the GPU would hide)
void emu_check_ptr(const void *p, size_t n);
template <class T> static inline T __ldg(const T *p) { emu_check_ptr(p, sizeof(T)); return *p; }

enum { EMU_SHFL, EMU_SHFL_UP, EMU_SHFL_DOWN, EMU_MIN_I, EMU_MIN_U, EMU_MAX_I, EMU_MAX_U, EMU_ANY, EMU_SYNC };
// posts this lane's (kind, operand, argument, width) for the lanes of mask; returns its result
uint32_t emu_collective(unsigned mask, int kind, uint32_t v, int arg, int width);
// a shuffle of a 4- or 8-byte value (the latter as two 32-bit shuffles, as CUDA's headers do)
template <class T> static inline T emu_shuffle(unsigned mask, int kind, T v, int arg, int width)
{
	static_assert(sizeof(T) == 4 || sizeof(T) == 8, "emu: shuffles of 4- or 8-byte values only");
	uint32_t x[2] = {0, 0};
	memcpy(x, &v, sizeof(T));
	for (size_t i = 0; i < sizeof(T) / 4; ++i) x[i] = emu_collective(mask, kind, x[i], arg, width);
	memcpy(&v, x, sizeof(T));
	return v;
}
template <class T> static inline T __shfl_sync(unsigned mask, T v, int src, int width = 32)
{
	return emu_shuffle(mask, EMU_SHFL, v, src, width);
}
template <class T> static inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32)
{
	return emu_shuffle(mask, EMU_SHFL_UP, v, (int)delta, width);
}
template <class T> static inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32)
{
	return emu_shuffle(mask, EMU_SHFL_DOWN, v, (int)delta, width);
}
static inline int __reduce_min_sync(unsigned mask, int v) { return (int)emu_collective(mask, EMU_MIN_I, v, 0, 32); }
static inline unsigned __reduce_min_sync(unsigned mask, unsigned v) { return emu_collective(mask, EMU_MIN_U, v, 0, 32); }
static inline int __reduce_max_sync(unsigned mask, int v) { return (int)emu_collective(mask, EMU_MAX_I, v, 0, 32); }
static inline unsigned __reduce_max_sync(unsigned mask, unsigned v) { return emu_collective(mask, EMU_MAX_U, v, 0, 32); }
static inline int __dp4a(int a, int b, int c)  // signed bytes, as the instruction
{
	for (int k = 0; k < 4; ++k) c += (int)(signed char)(a >> (8 * k)) * (int)(signed char)(b >> (8 * k));
	return c;
}
static inline int __any_sync(unsigned mask, int p) { return (int)emu_collective(mask, EMU_ANY, p != 0, 0, 32); }
static inline void __syncwarp(unsigned mask = 0xffffffffu) { emu_collective(mask, EMU_SYNC, 0, 0, 32); }

void __syncthreads();  // waits for every thread of the block that has not exited
static inline void __threadfence_block() {}  // fibers switch only in collectives: memory is always in order

// runs grid blocks of block threads of f with `shared` bytes of dynamic shared memory; 0, or 1 after
// an emulator error (see emu_last_error)
int emu_launch(const char *name, unsigned grid, unsigned block, unsigned shared, std::function<void()> f);
